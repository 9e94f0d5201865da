#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real programs under a cap, side by side: dd (read/write), cat into a pipe (read),
# cp (copy_file_range asking ~2^63 bytes: the clamp must let the cap act) and python
# shutil.copyfile (sendfile64). Each moves 8 MiB at 4 MiB/s; data exact, calls counted.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd dd cat cp python3
make_data "$T/src" 8
cap=$((4 * MiB))
timed dd limited 'write=4MiB/s' "$T/dd.json" dd if="$T/src" of="$T/dd.out" bs=64k status=none
timed cat sh -c 'LD_PRELOAD="$1" BONSAI_LIMITS="read=4MiB/s" BONSAI_STATS="$2" cat "$3" | cat > "$4"' \
  sh "$PRELOAD" "$T/cat.json" "$T/src" "$T/cat.out"
timed cp limited 'copy_file_range=4MiB/s' "$T/cp.json" cp "$T/src" "$T/cp.out"
# python times the copy itself (its start-up through the pyenv shim is slow)
timed py limited 'sendfile=4MiB/s' "$T/py.json" python3 -c 'import shutil, sys, time
t = time.monotonic(); shutil.copyfile(sys.argv[1], sys.argv[2]); print(time.monotonic() - t)' \
  "$T/src" "$T/py.out" > "$T/py.inner"
wait

check_rate "dd write" $((8 * MiB)) "$(timed_ok dd)" $cap
same_data "$T/src" "$T/dd.out"
[ "$(stats_sum "$T/dd.json" bytes write)" -eq $((8 * MiB)) ] || fail "dd: write bytes not counted"
[ "$(stats_sum "$T/dd.json" bytes read)" -ge $((8 * MiB)) ] || fail "dd: read bytes not counted"

check_rate "cat read" $((8 * MiB)) "$(timed_ok cat)" $cap
same_data "$T/src" "$T/cat.out"
[ "$(stats_sum "$T/cat.json" bytes read)" -ge $((8 * MiB)) ] || fail "cat: read bytes not counted"

check_rate "cp copy_file_range" $((8 * MiB)) "$(timed_ok cp)" $cap
same_data "$T/src" "$T/cp.out"
[ "$(stats_sum "$T/cp.json" bytes copy_file_range)" -eq $((8 * MiB)) ] || fail "cp: copy_file_range bytes"
[ "$(stats_sum "$T/cp.json" calls copy_file_range)" -ge 8 ] || fail "cp: ~2^63-byte request was not clamped"

timed_ok py > /dev/null
check_rate "python shutil sendfile" $((8 * MiB)) "$(cat "$T/py.inner")" $cap
same_data "$T/src" "$T/py.out"
[ "$(stats_sum "$T/py.json" bytes sendfile)" -eq $((8 * MiB)) ] || fail "python: sendfile bytes"
