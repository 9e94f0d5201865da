#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Deployments apart on one Redis, through ACL users (issue 50). A redis-server with the
# default user off and two ACL users holding only the minimal rights docs/reference/fleet.md gives
# (the agent's commands, one namespace's key pattern each): host 1 serves `web` in
# namespace teamA as user teama (redis://teama@HOST:PORT + password_file: AUTH USER
# PASSWORD), host 2 serves its own `web` in the default namespace as user dflt. Each
# fleet counts only its own host (the keys are apart, the default namespace's are the
# keys before namespaces), `stat --fleet` names the namespace, and a host of teamA that
# authenticates as dflt is refused by Redis (NOPERM: not its keys), said by its agent.
# timeout: 45
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_redis_start
# The minimal ACL of docs/reference/fleet.md (kept in step with it: the doc's line is used as is).
acl_cmds=$(sed -n 's/^ *ACL SETUSER bonsai on >PASSWORD resetkeys ~bonsai:fleet:NAMESPACE:\* resetchannels \(.*\)$/\1/p' \
  "$FLEET_REPO/docs/reference/fleet.md")
[ -n "$acl_cmds" ] || fail "no minimal ACL line in docs/reference/fleet.md"
rcli ACL SETUSER admin on '>adminpw' '~*' '&*' +@all > /dev/null || fail "ACL admin"
# shellcheck disable=SC2086
rcli ACL SETUSER teama on '>pw-a' resetkeys '~bonsai:fleet:teamA:*' resetchannels $acl_cmds > /dev/null || fail "ACL teama"
# shellcheck disable=SC2086
rcli ACL SETUSER dflt on '>pw-d' resetkeys '~bonsai:fleet:{*' resetchannels $acl_cmds > /dev/null || fail "ACL dflt"
rcli ACL SETUSER default off > /dev/null || fail "ACL default off"
acli() { timeout 5 redis-cli -p "$REDIS_PORT" --user admin --pass adminpw --no-auth-warning "$@"; }
timeout 5 redis-cli -p "$REDIS_PORT" ping 2>&1 | grep -q NOAUTH || fail "the default user is still on"

printf 'pw-a\n' > "$T/a.pass"; printf 'pw-d\n' > "$T/d.pass"; chmod 600 "$T/a.pass" "$T/d.pass"
conf() {  # FILE USER PASSFILE NAMESPACE
  cat > "$1" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis://$2@127.0.0.1:$REDIS_PORT
      password_file: $3
      namespace: $4
      period: 100ms
    limits:
      - calls: [write]
        rate: 8MiB/s
EOC
}
conf "$T/a.yaml" teama "$T/a.pass" teamA
conf "$T/d.yaml" dflt "$T/d.pass" default
conf "$T/bad.yaml" dflt "$T/d.pass" teamA
for i in 1 2 3; do fleet_agent_start "$i"; done
sleep 0.2
in_host 1 "$CTL" load "$T/a.yaml" > /dev/null 2>&1 || fail "load host 1"
in_host 2 "$CTL" load "$T/d.yaml" > /dev/null 2>&1 || fail "load host 2"
in_host 3 "$CTL" load "$T/bad.yaml" > /dev/null 2>&1 || fail "load host 3"
for i in $(seq 1 20); do  # 100 ms leases: a second or two
  [ "$(fleet_field 1 'd["fleet"]["renewals"] > 0 and d["fleet"]["state"]')" = leased ] &&
    [ "$(fleet_field 2 'd["fleet"]["state"]')" = leased ] && break
  sleep 0.2
done
for h in 1 2; do
  [ "$(fleet_field $h 'd["fleet"]["state"]')" = leased ] || fail "host $h: no lease: $(fleet_field $h 'd["fleet"]'); $(cat "$T/agent$h.log")"
  [ "$(fleet_field $h 'd["fleet"]["live_hosts"]')" = 1 ] || fail "host $h counts $(fleet_field $h 'd["fleet"]["live_hosts"]') hosts"
done
[ "$(fleet_field 1 'd["fleet"]["namespace"]')" = teamA ] || fail "host 1's namespace: $(fleet_field 1 'd["fleet"]')"
[ "$(fleet_field 2 'd["fleet"]["namespace"]')" = default ] || fail "host 2's namespace: $(fleet_field 2 'd["fleet"]')"
[ "$(acli ZRANGE 'bonsai:fleet:teamA:{web}:live' 0 -1)" = h1 ] || fail "teamA's keys: $(acli KEYS '*')"
[ "$(acli ZRANGE 'bonsai:fleet:{web}:live' 0 -1)" = h2 ] || fail "the default namespace's keys: $(acli KEYS '*')"
in_host 1 "$CTL" stat --fleet web > "$T/fleet1.txt" || fail "stat --fleet as teama: $(cat "$T/fleet1.txt")"
grep -q "namespace teamA.* 1 live host" "$T/fleet1.txt" || fail "stat --fleet: $(cat "$T/fleet1.txt")"
in_host 2 "$CTL" stat --fleet web --json > "$T/fleet2.json" || fail "stat --fleet as dflt"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["namespace"] == "default" and [h["host"] for h in d["hosts"]] == ["h2"], d' \
  "$T/fleet2.json" || fail "stat --fleet --json: $(cat "$T/fleet2.json")"
# Host 3: teamA's keys as dflt: Redis refuses, the agent says why, the host stays on its fallback.
[ "$(fleet_field 3 'd["fleet"]["state"]')" = waiting ] || fail "host 3 leased with another namespace's user"
grep -q "NOPERM\|No permissions" "$T/agent3.log" || fail "host 3's agent: $(cat "$T/agent3.log")"
exit 0
