#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A fleet that cannot work says why where an operator looks (issue "every word true"):
# `check` names a password_file that does not exist; the agent `load` starts logs to a
# file in the user's 0700 directory, whose path `load` prints; once the password file is
# gone and the agent with it, plain `stat` says in one line why the fleet does not work,
# naming the file and the log.
# timeout: 45
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_redis_start
rcli CONFIG SET requirepass pw-web > /dev/null || fail "requirepass"
printf 'pw-web\n' > "$T/web.pass"
chmod 600 "$T/web.pass"
conf() {  # FILE PASSFILE
  cat > "$1" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis://default@127.0.0.1:$REDIS_PORT
      password_file: $2
      period: 100ms
    limits:
      - calls: [write]
        rate: 8MiB/s
EOC
}
conf "$T/missing.yaml" "$T/missing.pass"
conf "$T/web.yaml" "$T/web.pass"

# check (and load) name a password file that does not exist.
rc=0
out=$(in_host 1 "$CTL" check "$T/missing.yaml" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "check of a missing password file: exit $rc: $out"
grep -q "password_file $T/missing.pass: No such file" <<<"$out" || fail "check did not name it: $out"

# load starts the agent and prints its log's path.
out=$(in_host 1 "$CTL" load "$T/web.yaml" 2>&1) || fail "load: $out"
note "$out"
log=/dev/shm/$(ns 1)bonsai-fleet.$(id -u).d/fleet-agent.log
grep -q "its log: $log" <<<"$out" || fail "load did not print the agent's log ($log): $out"
[ -f "$log" ] || fail "no agent log at $log"
[ "$(stat -c %a "$(dirname "$log")")" = 700 ] || fail "the log's directory is not 0700"
for _ in $(seq 1 40); do
  [ "$(fleet_field 1 'd["fleet"]["state"]')" = leased ] && break
  sleep 0.1
done
[ "$(fleet_field 1 'd["fleet"]["state"]')" = leased ] || fail "no lease: $(in_host 1 "$CTL" stat web); $(cat "$log")"
in_host 1 "$CTL" stat web | grep -q "NOT WORKING" && fail "a leased fleet said NOT WORKING"

# The password file goes, and the agent with it: plain stat says why, in one line.
pid=$(fleet_field 1 'd["fleet"]["agent_pid"]')
[ "$pid" -gt 0 ] || fail "no agent pid"
rm -f "$T/web.pass"
kill "$pid"
for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
sleep 0.5  # the 100 ms lease lapses
out=$(in_host 1 "$CTL" stat web)
line=$(grep "NOT WORKING" <<<"$out") || fail "plain stat does not say why: $out"
note "$line"
grep -q "password_file $T/web.pass: No such file" <<<"$line" || fail "stat did not name the password file: $line"
grep -q "its log: $log" <<<"$line" || fail "stat did not name the log: $line"
exit 0
