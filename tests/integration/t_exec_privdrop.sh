#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #8.7: privilege drops stay in the service: `run -- setpriv --reuid=65534 ... dd`
# holds the cap (the segment, root's and 0600, is reached through the inherited
# BONSAI_SHM_FD), also with a scrubbed environment, and is counted in the service.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd setpriv dd
nobody_loads_lib || skip "needs root, and a library user nobody can read (not under a private directory)"
cap=$((2 * MiB))
drop="setpriv --reuid=65534 --regid=65534 --clear-groups"
s=$(now_ns)
"$CTL" run -s drop -l 'write=2MiB/s' -- $drop dd if=/dev/zero of=/dev/null bs=64k count=48 status=none 2>"$T/err" ||
  fail "setpriv dd: $(cat "$T/err")"
check_rate "setpriv --reuid=65534 dd" $((3 * MiB)) "$(secs_since "$s")" $cap 0.5 1.02
grep -q "running without service limits" "$T/err" && fail "$(cat "$T/err")"
[ "$(total_bytes drop write)" = $((3 * MiB)) ] || fail "service counted $(total_bytes drop write) bytes"

s=$(now_ns)
"$CTL" run -s drop -l 'write=2MiB/s' -- $drop env -i dd if=/dev/zero of=/dev/null bs=64k count=48 status=none ||
  fail "setpriv env -i dd failed"
check_rate "setpriv --reuid=65534 env -i dd" $((3 * MiB)) "$(secs_since "$s")" $cap 0.5 1.02

# A library other users cannot read: run says a child that drops privileges cannot follow.
mkdir -m 700 "$T/private"
cp "$LIB" "$T/private/libbonsai.so"
BONSAI_LIB=$T/private/libbonsai.so "$CTL" run -s drop -- true 2>"$T/warn" || fail "run failed"
grep -q "drops privileges" "$T/warn" || fail "no warning for a library other users cannot read: $(cat "$T/warn")"
