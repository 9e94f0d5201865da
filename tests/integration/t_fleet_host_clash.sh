#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host-id clash (issue 50): two hosts whose agents call with one id (clones, host names
# cut to 63 characters) would merge into one live host. Each agent sends a token of its
# own; the store sees the id's token change back and forth and says so: both agents log
# a HOST ID CLASH, `stat` and `stat --json` of both hosts show it, `stat --fleet` marks
# the id. A restarted agent (its token changes once) is no clash.
# timeout: 45
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_redis_start
cfg=$T/fleet.yaml
fleet_config "$cfg" 8MiB/s 100ms
env BONSAI_SHM_PREFIX="$(ns 1)" "$CTL" fleet-agent --host-id clone 2>>"$T/agent1.log" & AGENT_PID[1]=$!
env BONSAI_SHM_PREFIX="$(ns 2)" "$CTL" fleet-agent --host-id clone 2>>"$T/agent2.log" & AGENT_PID[2]=$!
fleet_agent_start 3
cleanup_hooks+=("kill ${AGENT_PID[1]} ${AGENT_PID[2]} 2>/dev/null")
sleep 0.2
for i in 1 2 3; do in_host "$i" "$CTL" load "$cfg" > /dev/null 2>&1 || fail "load host $i"; done
for i in $(seq 1 30); do
  grep -q "HOST ID CLASH" "$T/agent1.log" && grep -q "HOST ID CLASH" "$T/agent2.log" && break
  sleep 0.1
done
for h in 1 2; do
  grep -q "HOST ID CLASH: another agent calls the store as host 'clone'" "$T/agent$h.log" ||
    fail "agent $h did not say the clash: $(cat "$T/agent$h.log")"
  [ "$(fleet_field $h 'd["fleet"]["host_id_clash"]')" = True ] || fail "host $h's stat: $(fleet_field $h 'd["fleet"]')"
  in_host $h "$CTL" stat web | grep -q "HOST ID CLASH" || fail "host $h's stat text does not say the clash"
done
in_host 1 "$CTL" stat --prometheus | grep -q '^bonsai_fleet_host_id_clash{service="web",host="clone"} 1' ||
  fail "no bonsai_fleet_host_id_clash 1 in the Prometheus text"
in_host 3 "$CTL" stat --fleet web > "$T/fleet.txt" || fail "stat --fleet"
grep -q "HOST ID CLASH: 1 host id" "$T/fleet.txt" && grep -q "^  clone .*CLASH$" "$T/fleet.txt" ||
  fail "stat --fleet: $(cat "$T/fleet.txt")"
grep -q "^  h3 .*CLASH" "$T/fleet.txt" && fail "h3 marked as a clash: $(cat "$T/fleet.txt")"
[ "$(fleet_field 3 'd["fleet"]["host_id_clash"]')" = False ] || fail "host 3 sees a clash of its own"

# A restart is not a clash: host 3's agent killed and started again.
kill "${AGENT_PID[3]}"; wait "${AGENT_PID[3]}" 2>/dev/null
fleet_agent_start 3
sleep 1.5
grep -q "CLASH" "$T/agent3.log" && fail "a restarted agent was taken for a clash: $(cat "$T/agent3.log")"
[ "$(fleet_field 3 'd["fleet"]["host_id_clash"]')" = False ] || fail "host 3: clash after a restart"
[ "$(fleet_field 3 'd["fleet"]["state"]')" = leased ] || fail "host 3 not leased after its restart"
exit 0
