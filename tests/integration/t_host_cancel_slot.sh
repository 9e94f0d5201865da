#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A thread cancelled while asleep in a service's wait is no longer counted as asleep:
# cancel_wait's two throttled threads are cancelled, the process stays alive without
# I/O, and `set --wait` must find no process asleep under the old limits (before the
# fix the cancelled threads stayed counted and set --wait timed out, exit 1).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog cancel_wait

"$CTL" run -s cancelled -l 'write=1MiB/s' -- "$PRE/cancel_wait" 30 >"$T/out" 2>&1 &
pid=$!
cleanup_hooks+=("kill $pid 2>/dev/null")
wait_attached cancelled 1
for _ in $(seq 50); do grep -q '^join_secs=' "$T/out" && break; sleep 0.1; done
grep -q '^join_secs=' "$T/out" || fail "cancel_wait did not cancel its threads: $(cat "$T/out")"
out=$("$CTL" set --wait=2000 cancelled 'write=2MiB/s' 2>&1) || fail "set --wait: $out"
note "$out"
echo "$out" | grep -q "applied by 1 process" || fail "set --wait did not report the process: $out"
exit 0
