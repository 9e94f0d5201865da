#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps when the store goes away (issue 37): four busy hosts under an 8 MiB/s fleet
# cap. Redis stopped (SIGSTOP) for 4 s: the leases run out and every host falls back to
# cap / 4 on its own -- the aggregate stays near the cap (never unlimited), every host
# keeps at least most of its share in every second (never stalled). Resumed: leases
# again. Restarted empty on the same port, and its scripts flushed (NOSCRIPT): the
# agents load the script again and lease on.
# timeout: 120
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_setup 4 8 "1 2 3 4" 90
[ "$(fleet_field 1 'd["fleet"]["state"]')" = leased ] || fail "no lease before the outage: $(fleet_field 1 'd["fleet"]')"

kill -STOP "$REDIS_PID"
s=$(fleet_sample 4 4 0.5)
state=$(fleet_field 2 'd["fleet"]["state"]')
fallbacks=$(fleet_field 2 'd["fleet"]["fallbacks"]')
kill -CONT "$REDIS_PID"
check_rate "aggregate, store stopped" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.10
for h in 1 2 3 4; do
  check_rate "host $h's lowest 1 s, store stopped" "$(sample_eval "$s" "int(min_window_rate($h, 1.0))")" 1 \
    $((cap / 4)) 0.6 1.5
done
[ "$state" = lapsed ] || fail "host 2's lease state during the outage: $state (want lapsed)"
[ "$fallbacks" -ge 1 ] || fail "host 2's processes never fell back ($fallbacks)"

# Resumed: leased again within a second or so.
sleep 1.2
[ "$(fleet_field 2 'd["fleet"]["state"]')" = leased ] || fail "no lease after the store resumed: $(fleet_field 2 'd["fleet"]')"
s=$(fleet_sample 4 2 0.5)
check_rate "aggregate, store resumed" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.10

# Restarted empty on the same port (no persistence: every key and script is gone).
r0=$(fleet_field 3 'd["fleet"]["renewals"]')
kill -9 "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null
fleet_redis_start "$REDIS_PORT"
sleep 1.5
r1=$(fleet_field 3 'd["fleet"]["renewals"]')
[ "$(fleet_field 3 'd["fleet"]["state"]')" = leased ] || fail "no lease after a restart: $(fleet_field 3 'd["fleet"]')"
[ "$r1" -gt "$r0" ] || fail "no renewal after the store restarted ($r0 -> $r1)"
[ "$(rcli zcard 'bonsai:fleet:{web}:live' | tr -d '\r')" = 4 ] || fail "the restarted store does not count 4 live hosts"

# Scripts flushed: EVALSHA answers NOSCRIPT, the agent loads the script again and goes on.
f0=$(fleet_field 4 'd["fleet"]["failures"]'); r0=$(fleet_field 4 'd["fleet"]["renewals"]')
rcli script flush > /dev/null
sleep 1
f1=$(fleet_field 4 'd["fleet"]["failures"]'); r1=$(fleet_field 4 'd["fleet"]["renewals"]')
[ "$r1" -gt "$r0" ] || fail "no renewal after SCRIPT FLUSH ($r0 -> $r1)"
[ "$f1" = "$f0" ] || fail "SCRIPT FLUSH made lease calls fail ($f0 -> $f1): NOSCRIPT not handled"
s=$(fleet_sample 4 2 0.5)
check_rate "aggregate, after restart and flush" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.10
exit 0
