#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A live set reaches a process that is asleep in a long wait: dd writing 1 MiB blocks
# under write=20KiB/s sleeps ~50 s per block; raising the cap must end the wait within
# a fraction of a second (waits sleep in short slices and watch the limits).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd

"$CTL" run -s sleepy -l 'write=20KiB/s' -- dd if=/dev/zero of=/dev/null bs=1M count=2 status=none &
pid=$!
cleanup_hooks+=("kill $pid 2>/dev/null")
wait_attached sleepy 1
sleep 1
t0=$(now_ns)
out=$("$CTL" set sleepy 'write=1GiB/s') || fail "set: $out"
wait $pid || fail "dd failed"
secs=$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
note "dd finished ${secs} s after the set (it had ~100 s of waiting left)"
awk -v s="$secs" 'BEGIN { exit !(s < 2.0) }' || fail "the set did not end the wait promptly (${secs} s)"
[ "$(jq_stat sleepy "d['total']['calls']['write']['bytes']")" = $((2 * MiB)) ] || fail "bytes lost"
exit 0
