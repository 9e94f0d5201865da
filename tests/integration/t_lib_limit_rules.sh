#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The limit language at work, side by side: a call-rate limit (openat=50/s), group names
# (reads, writes), a `+` shared bucket against two separate ones, an fd= rule that must
# not touch file writes, and 4 threads of one process sharing one cap.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd dd
need_prog open_loop threads_write
make_data "$T/src" 8
M4=$((4 * MiB))
limited 'openat=50/s' "$T/open.json" "$PRE/open_loop" "$T/src" 100 > "$T/open.out" &
limited 'write=4MiB/s' "$T/thr.json" "$PRE/threads_write" 4 8M > "$T/thr.out" &
timed reads limited 'reads=4MiB/s' "$T/reads.json" dd if="$T/src" of=/dev/null bs=64k status=none
timed writes limited 'writes=4MiB/s' "$T/writes.json" dd if=/dev/zero of=/dev/null bs=64k count=128 status=none
timed shared limited 'read+write=4MiB/s' "$T/shared.json" dd if="$T/src" of="$T/shared.out" bs=64k status=none
timed separate limited 'read=4MiB/s,write=4MiB/s' "$T/sep.json" dd if="$T/src" of="$T/sep.out" bs=64k status=none
timed fdsock limited 'writes=1MiB/s:fd=socket' "$T/fdsock.json" dd if="$T/src" of="$T/fdsock.out" bs=64k status=none
wait

out=$(cat "$T/open.out")
check_rate "openat=50/s, 100 opens" "$(field "$out" bytes)" "$(field "$out" secs)" 50
[ "$(stats_sum "$T/open.json" calls openat)" -eq 100 ] || fail "openat calls not counted"

out=$(cat "$T/thr.out")
check_rate "4 threads sharing write=4MiB/s" "$(field "$out" bytes)" "$(field "$out" secs)" $M4
[ "$(stats_sum "$T/thr.json" bytes write)" -eq $((8 * MiB)) ] || fail "threads: write bytes not summed"
[ "$(stats_sum "$T/thr.json" calls write)" -eq 512 ] || fail "threads: write calls not summed"

check_rate "group reads (dd read)" $((8 * MiB)) "$(timed_ok reads)" $M4
check_rate "group writes (dd write)" $((8 * MiB)) "$(timed_ok writes)" $M4

shared=$(timed_ok shared)
separate=$(timed_ok separate)
check_rate "read+write=4MiB/s (16 MiB charged)" $((16 * MiB)) "$shared" $M4
check_rate "read=4MiB/s,write=4MiB/s" $((8 * MiB)) "$separate" $M4
check_between "shared/separate time ratio" "$(awk -v a="$shared" -v b="$separate" 'BEGIN { printf "%.2f", a / b }')" 1.7 2.3
same_data "$T/src" "$T/shared.out"

secs=$(timed_ok fdsock)
check_between "file write under writes=1MiB/s:fd=socket (s)" "$secs" 0 1.5
[ "$(stats_sum "$T/fdsock.json" throttled write read)" -eq 0 ] || fail "fd=socket rule throttled a file"
[ "$(stats_sum "$T/fdsock.json" bytes write)" -eq $((8 * MiB)) ] || fail "fd=socket: writes not counted"
same_data "$T/src" "$T/fdsock.out"
