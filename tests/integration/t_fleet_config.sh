#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps' configuration (issue 37): `check` accepts a good `fleet:` and reports each
# bad value at its FILE:LINE:COL with exit 2 (store forms, period bounds, scope process,
# unknown keys, a password file that is not absolute), and `load` of a bad file changes
# nothing; the agent refuses a bad --host-id (exit 2) and a second agent in one namespace
# (exit 1); `load` starts an agent when none runs, and it leaves when its services are gone.
# Issue 50: namespace, expected_hosts and redis://USER@ are checked the same way.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"

good=$T/good.yaml
printf 'pw\n' > "$T/redis.pass"
chmod 600 "$T/redis.pass"
cat > "$good" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis://127.0.0.1:6390
      period: 100ms
      password_file: $T/redis.pass
    limits:
      - calls: [write]
        rate: 8MiB/s
  api:
    fleet: {store: "redis+unix:///run/redis/redis.sock"}
    scope: service
    limits:
      - calls: [send]
        rate: 1MB/s
EOC
"$CTL" check "$good" > "$T/out" 2>&1 || fail "good file refused: $(cat "$T/out")"
# `check` says what a host does before its first grant (issue 50): the whole cap here.
grep -q "web: before its first grant .* the whole cap" "$T/out" || fail "check does not explain the cold start: $(cat "$T/out")"

bad=$T/bad.yaml
cat > "$bad" <<'EOC'
version: 1
services:
  a:
    fleet:
      store: http://127.0.0.1:6379
      period: 20ms
  b:
    scope: process
    fleet:
      store: redis://127.0.0.1:99999
      perod: 1s
      password_file: relative.pass
  c:
    fleet:
      period: 11s
  d:
    fleet: {store: "redis://[::1]:6379", period: 250ms}
  e:
    fleet: {store: "rediss://h:1"}
  f:
    fleet:
      store: redis://bonsai@127.0.0.1:6379
      namespace: "team a"
      expected_hosts: 0
  g:
    fleet: {store: "redis://u:secret@127.0.0.1:6379", expected_hosts: 1000001}
EOC
"$CTL" check "$bad" > "$T/out" 2>&1
rc=$?
[ $rc = 2 ] || fail "bad file: exit $rc, want 2: $(cat "$T/out")"
expect() { grep -qF -- "$1" "$T/out" || fail "missing diagnostic '$1' in: $(cat "$T/out")"; }
expect "bad.yaml:5:14: bad store 'http://127.0.0.1:6379'"
expect "bad.yaml:6:15: bad period '20ms'"
expect "bad.yaml:8:12: a fleet service's caps hold all its processes together: scope must be service"
expect "bad.yaml:10:14: bad store 'redis://127.0.0.1:99999': bad port"
expect "bad.yaml:11:7: unknown key 'perod' in fleet (did you mean 'period'?)"
expect "bad.yaml:12:22: bad password_file 'relative.pass'"
expect "bad.yaml:15:15: bad period '11s'"
expect "bad.yaml:15:7: 'fleet' needs 'store: redis://HOST:PORT'"
expect "TLS is not built into the agent"
grep -q "bad.yaml:17" "$T/out" && fail "an IPv6 store was refused: $(cat "$T/out")"
# Issue 50: an ACL user needs its password file, never a password in the address (nor
# echoed back), a namespace is a key-safe word, expected_hosts a count.
expect "bad.yaml:22:14: store user 'bonsai' needs password_file"
expect "bad.yaml:23:18: bad namespace 'team a'"
expect "bad.yaml:24:23: bad expected_hosts '0'"
expect "put the password in password_file, not in the address"
expect "bad expected_hosts '1000001'"
grep -q secret "$T/out" && fail "a password in the store address was echoed: $(cat "$T/out")"

# load of a bad file creates nothing.
"$CTL" load "$bad" > /dev/null 2>&1 && fail "load of a bad file succeeded"
[ -e "$(seg_file a)" ] && fail "load of a bad file created a segment"

# The agent: a bad --host-id is a usage error; a second agent in the namespace is refused.
"$CTL" fleet-agent --host-id 'bad id' > /dev/null 2>&1
[ $? = 2 ] || fail "bad --host-id not refused with exit 2"
"$CTL" fleet-agent --host-id one 2> "$T/agent1.log" &
a1=$!
cleanup_hooks+=("kill $a1 2>/dev/null")
for i in $(seq 1 50); do grep -q "namespace" "$T/agent1.log" && break; sleep 0.05; done
"$CTL" fleet-agent --host-id two > /dev/null 2> "$T/agent2.log"
rc=$?
[ $rc = 1 ] || fail "a second agent in one namespace: exit $rc, want 1"
grep -q "another fleet agent (pid $a1)" "$T/agent2.log" || fail "second agent: $(cat "$T/agent2.log")"
kill $a1; wait $a1 2>/dev/null

# `load` of a fleet service starts an agent when none holds the lock; that one leaves
# once no fleet service is left (5 s after the last is removed).
lock=/dev/shm/${BONSAI_SHM_PREFIX}bonsai-fleet.$(id -u).d/lock
cat > "$T/one.yaml" <<'EOC'
version: 1
services:
  solo:
    fleet: {store: "redis://127.0.0.1:1"}
    limits: [{calls: [write], rate: 1MiB/s}]
EOC
"$CTL" load "$T/one.yaml" > /dev/null 2> "$T/load.err" || fail "load: $(cat "$T/load.err")"
grep -q "started a fleet agent" "$T/load.err" || fail "load did not start an agent: $(cat "$T/load.err")"
for i in $(seq 1 40); do flock -n "$lock" true || break; sleep 0.05; done
flock -n "$lock" true && fail "no agent holds $lock after load"
"$CTL" load "$T/one.yaml" > /dev/null 2> "$T/load2.err"
grep -q "started a fleet agent" "$T/load2.err" && fail "a second load started a second agent"
"$CTL" rm solo > /dev/null
for i in $(seq 1 100); do flock -n "$lock" true && break; sleep 0.1; done
flock -n "$lock" true || fail "the started agent did not leave 10 s after its service was removed"
exit 0
