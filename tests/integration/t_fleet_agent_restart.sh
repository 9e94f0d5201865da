#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps when a host's agent dies (issue 37): four hosts under an 8 MiB/s fleet cap,
# only host 1 busy, so its grant is nearly the whole cap. Its agent killed (SIGKILL):
# nobody renews its lease, and its processes fall back by themselves to cap / 4 (the
# library, no agent involved) -- neither unlimited nor stalled. The agent restarted:
# it leases again and host 1 gets nearly the whole cap back.
# timeout: 40
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_setup 4 8 1 20
s=$(fleet_sample 1 1.5 0.5)
check_rate "host 1 alone, leased" "$(sample_eval "$s" 'int(rate(1))')" 1 "$cap" 0.75 1.08

kill -9 "${AGENT_PID[1]}"; wait "${AGENT_PID[1]}" 2>/dev/null
sleep 1  # the lease (two periods) runs out; the next waits apply the fallback
s=$(fleet_sample 1 2 0.5)
check_rate "host 1, agent killed (fallback cap/4)" "$(sample_eval "$s" 'int(rate(1))')" 1 $((cap / 4)) 0.75 1.15
check_rate "host 1's lowest 0.5 s, agent killed" "$(sample_eval "$s" 'int(min_window_rate(1, 0.5))')" 1 $((cap / 4)) 0.5 1.5
[ "$(fleet_field 1 'd["fleet"]["state"]')" = lapsed ] || fail "host 1's lease state: $(fleet_field 1 'd["fleet"]')"
[ "$(fleet_field 1 'd["fleet"]["fallbacks"]')" -ge 1 ] || fail "host 1's processes did not fall back"

fleet_agent_start 1
sleep 1.5
[ "$(fleet_field 1 'd["fleet"]["state"]')" = leased ] || fail "no lease after the agent restarted: $(fleet_field 1 'd["fleet"]')"
s=$(fleet_sample 1 1.5 0.5)
check_rate "host 1, agent restarted" "$(sample_eval "$s" 'int(rate(1))')" 1 "$cap" 0.75 1.08
exit 0
