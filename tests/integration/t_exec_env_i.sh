#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #16: `env -i dd` under `bonsaictl run` holds the cap (process and service
# scope); `stat` lists a process under the program it runs now (sh -c 'exec dd');
# #8.12: a relative BONSAI_LIB still works after a child changes directory.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd
cap=$((2 * MiB))
for scope in process service; do
  s=$(now_ns)
  "$CTL" run -s envi --scope $scope -l 'write=2MiB/s' -- env -i dd if=/dev/zero of=/dev/null bs=64k count=48 status=none ||
    fail "env -i dd ($scope) failed"
  check_rate "env -i dd, scope $scope" $((3 * MiB)) "$(secs_since "$s")" $cap 0.5 1.02
done

# exec keeps the pid (and the slot): the slot is named after the program it runs now.
timed shdd "$CTL" run -s comm -l 'write=1MiB/s' -- sh -c 'exec dd if=/dev/zero of=/dev/null bs=64k count=64 status=none'
wait_attached comm 1
sleep 0.2
names=$(jq_stat comm '" ".join(p["comm"] for p in d["processes"])')
wait
timed_ok shdd >/dev/null
[ "$names" = dd ] || fail "stat lists '$names' for sh -c 'exec dd', not dd"
note "sh -c 'exec dd' is listed as: $names"

# A relative BONSAI_LIB is made absolute: a child that changes directory still loads it.
rel=$(realpath --relative-to="$PWD" "$LIB")
s=$(now_ns)
BONSAI_LIB=$rel "$CTL" run -s reldir -l 'write=2MiB/s' -- sh -c 'cd / && dd if=/dev/zero of=/dev/null bs=64k count=48 status=none' \
  2>"$T/rel.err" || fail "relative BONSAI_LIB: $(cat "$T/rel.err")"
grep -q "cannot be preloaded" "$T/rel.err" && fail "relative BONSAI_LIB: $(cat "$T/rel.err")"
check_rate "dd after cd, BONSAI_LIB=$rel" $((3 * MiB)) "$(secs_since "$s")" $cap 0.5 1.02
