#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A cold start with the store away (issue 50): four hosts whose agents never reach Redis
# (nothing listens on the store's port) run, before any grant, at the fallback cap /
# expected_hosts: with `expected_hosts: 4` the four busy hosts hold at most 1.05 x the
# fleet cap together (without it each would run at the whole cap: 4 x). `check` says so.
# timeout: 40
. "$(dirname "$0")/lib/fleet_lib.sh"

REDIS_PORT=$(free_port)  # nobody listens: the agents keep failing to connect
cap=$((8 * MiB))
cfg=$T/fleet.yaml
cat > "$cfg" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis://127.0.0.1:$REDIS_PORT
      expected_hosts: 4
    limits:
      - calls: [write]
        rate: 8MiB/s
EOC
"$CTL" check "$cfg" > "$T/check.out" 2>&1 || fail "check: $(cat "$T/check.out")"
grep -q "web: before its first grant .* the cap / 4 (expected_hosts): write=2MiB/s" "$T/check.out" ||
  fail "check does not explain expected_hosts: $(cat "$T/check.out")"

fleet_hosts_up 4 "$cfg"
for i in 1 2 3 4; do fleet_writer_start "$i" "$cfg" 12; done
sleep 1.5
s=$(fleet_sample 4 4 0.5)
check_rate "aggregate of 4 hosts that never reached the store" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.05
for h in 1 2 3 4; do
  check_rate "host $h before any grant" "$(sample_eval "$s" "int(rate($h))")" 1 $((cap / 4)) 0.75 1.10
done
[ "$(fleet_field 1 'd["fleet"]["state"]')" = waiting ] || fail "host 1 got a lease from nowhere: $(fleet_field 1 'd["fleet"]')"
[ "$(fleet_field 1 'd["fleet"]["expected_hosts"]')" = 4 ] || fail "stat: $(fleet_field 1 'd["fleet"]')"
[ "$(fleet_field 1 'd["fleet"]["failures"]')" -ge 1 ] || fail "the agent never tried the store: $(fleet_field 1 'd["fleet"]')"
exit 0
