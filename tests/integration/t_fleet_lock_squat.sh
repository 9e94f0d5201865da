#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fleet agent's lock against another local user (issue 50). User nobody creates and
# holds the lock's old name (/dev/shm/<prefix>bonsai-fleet.<uid>.lock, world-writable
# /dev/shm): root's `load` no longer cares -- it starts an agent, which holds its lock in
# a directory only root can write. What nobody can still do is take that directory's
# name first (a directory, or a symlink to one): then `load` fails loudly (exit 1, says
# the directory is squatted and that no agent serves), `fleet-agent` refuses (exit 1),
# and the service waits at cap / expected_hosts, never silently at the whole cap.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd setpriv flock
[ "$(id -u)" = 0 ] || skip "needs root (to act as user nobody)"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

cat > "$T/f.yaml" <<'EOC'
version: 1
services:
  web:
    fleet: {store: "redis://127.0.0.1:1", expected_hosts: 4}
    limits: [{calls: [write], rate: 8MiB/s}]
EOC
chmod 755 "$T"; chmod 644 "$T/f.yaml"

# 1. The old name squatted and held by nobody: load still starts an agent.
old=/dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.0.lock
as_nobody flock "$old" sleep 30 &
squatter=$!
cleanup_hooks+=("kill $squatter 2>/dev/null; rm -f $old")
for i in $(seq 1 50); do [ -e "$old" ] && break; sleep 0.05; done
[ "$(stat -c %U "$old")" = nobody ] || fail "nobody could not create $old (test setup)"
"$CTL" load "$T/f.yaml" > "$T/load.out" 2> "$T/load.err" || fail "load with the old lock squatted: $(cat "$T/load.err")"
grep -q "started a fleet agent" "$T/load.err" || fail "load started no agent: $(cat "$T/load.err")"
dir=/dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.0.d
[ "$(stat -c '%U %a' "$dir")" = "root 700" ] || fail "lock directory: $(stat -c '%U %a' "$dir")"
flock -n "$dir/lock" true && fail "no agent holds $dir/lock after load"
as_nobody touch "$dir/x" 2>/dev/null && fail "nobody can write into $dir"
agent=$(cat "$dir/lock")
cleanup_hooks+=("kill $agent 2>/dev/null")
kill $squatter

# 2. The directory's name taken first by nobody (another namespace: no agent runs there).
export BONSAI_SHM_PREFIX=${BONSAI_SHM_PREFIX}sq.
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai*')
dir=/dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.0.d
as_nobody mkdir -m 777 "$dir"
"$CTL" load "$T/f.yaml" > "$T/load.out" 2> "$T/load.err"
rc=$?
[ $rc = 1 ] || fail "load with the lock directory squatted: exit $rc, want 1: $(cat "$T/load.err")"
grep -q "NO FLEET AGENT" "$T/load.err" && grep -q "squat" "$T/load.err" && grep -qF "$dir" "$T/load.err" ||
  fail "load's message: $(cat "$T/load.err")"
"$CTL" fleet-agent --host-id h > /dev/null 2> "$T/agent.err"
rc=$?
[ $rc = 1 ] && grep -q "squat" "$T/agent.err" || fail "fleet-agent with its lock squatted: exit $rc: $(cat "$T/agent.err")"
"$CTL" run -c "$T/f.yaml" -s web -- touch "$T/ran" > /dev/null 2> "$T/run.err"
rc=$?
[ $rc = 1 ] && grep -q "squat" "$T/run.err" && [ ! -e "$T/ran" ] || fail "run with the lock squatted: exit $rc: $(cat "$T/run.err")"
# Never the whole cap: the service runs at cap / expected_hosts meanwhile.
rate=$(jq_stat web 'd["fleet"]["rules"][0]["fallback"]')
[ "$rate" = $((2 * MiB)) ] || fail "fallback while no agent runs: $rate, want $((2 * MiB))"
rmdir "$dir"

# 3. A symlink in its place (to a directory nobody owns): refused the same way.
as_nobody mkdir -m 700 "$T/nobody.d" 2>/dev/null || { mkdir "$T/nobody.d"; chown nobody "$T/nobody.d"; }
as_nobody ln -s "$T/nobody.d" "$dir"
"$CTL" load "$T/f.yaml" > "$T/load.out" 2> "$T/load.err"
rc=$?
[ $rc = 1 ] && grep -q "not a directory" "$T/load.err" || fail "load with a symlink squat: exit $rc: $(cat "$T/load.err")"
[ -z "$(ls -A "$T/nobody.d")" ] || fail "something was created through the squatter's symlink"
rm -f "$dir"
"$CTL" load "$T/f.yaml" > "$T/load.out" 2> "$T/load.err" || fail "load once the squat is gone: $(cat "$T/load.err")"
kill "$(cat "$dir/lock")"
exit 0
