#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps through a Redis failover: a primary and a replica redis-server, three
# redis-sentinel (quorum 2, down-after 800 ms), four hosts under one 8 MiB/s fleet cap
# through store: redis+sentinel://..., each host's writer busy. The primary is killed
# (SIGKILL) mid-run; the Sentinels promote the replica. Measured where the bytes land
# (fleet_meter.py): the fleet's aggregate over every 1 s window stays <= 1.10 x cap (the
# lease state the new primary found stale starts a depth behind: no fresh depth on
# top of what the hosts used on their grants and fallbacks meanwhile; the script
# before it gave 1.26-1.32 x cap here, three runs of three), it is back to the cap within 2% from 2 s after the
# promotion, and every host ends leased from the new primary (its agent's status file,
# `stat --fleet`, the new primary's live set), the failover seen and said.
# timeout: 60
. "$(dirname "$0")/lib/fleet_lib.sh"
. "$TLIB/fleet_sentinel_lib.sh"

t_start=$(now_ns)
sentinel_cluster_up 800
note "cluster up after $(secs_since "$t_start") s"
cap=$((8 * MiB))
cfg=$T/fleet.yaml
cat > "$cfg" <<EOC
version: 1
services:
  web:
    fleet:
      store: $(sentinel_store)
      period: 250ms
      expected_hosts: 4
    limits:
      - calls: [write]
        rate: 8MiB/s
EOC
"$CTL" check "$cfg" >/dev/null || fail "check refused the Sentinel store: $("$CTL" check "$cfg" 2>&1)"
fleet_hosts_up 4 "$cfg"
note "hosts up after $(secs_since "$t_start") s"
mkdir "$T/m"
for h in 1 2 3 4; do mkfifo "$T/m/w$h"; done
python3 "$TLIB/fleet_meter.py" meter "$T/m" 4 30 0.05 "$T/meter.json" &
meter_pid=$!
cleanup_hooks+=("kill $meter_pid 2>/dev/null")
sleep 0.3
for h in 1 2 3 4; do fleet_fifo_writer_start "$h" "$cfg" 30 "$T/m"; done
# Every writer running (its host has written: `run` is slow to start on a loaded
# machine), then 2.5 s for their demand to settle: the failover is measured from a
# steady fleet, not from its start.
for i in $(seq 1 100); do
  n=0
  for h in 1 2 3 4; do in_host "$h" "$CTL" stat web --json 2>/dev/null | grep -q '"write":{"calls":[1-9]' && n=$((n + 1)); done
  [ "$n" = 4 ] && break
  [ "$i" = 100 ] && fail "only $n of the 4 writers wrote within 10 s"
  sleep 0.1
done
sleep 2.5
# leased_all: every host's lease state is `leased` (one stat each, no python).
leased_all() {
  local h
  for h in 1 2 3 4; do
    in_host "$h" "$CTL" stat web --json 2>/dev/null | grep -q '"state":"leased"' || return 1
  done
}
leased_all || fail "not every host leased before the failover: $(for h in 1 2 3 4; do in_host "$h" "$CTL" stat web --json | grep -o '"fleet":{[^}]*'; done)"
note "writers settled after $(secs_since "$t_start") s"
t_kill=$(date +%s.%N)
kill -9 "$PRIMARY_PID"
wait "$PRIMARY_PID" 2>/dev/null
t_promote=
for i in $(seq 1 150); do
  if [ "$(sentinel_primary_port 1)" = "$REPLICA_PORT" ]; then t_promote=$(date +%s.%N); break; fi
  sleep 0.1
done
[ -n "$t_promote" ] || fail "the Sentinels did not promote the replica within 15 s: $(tail -5 "$T/sentinel1.log")"
sleep 6
touch "$T/m/stop"
wait "$meter_pid" || fail "fleet_meter.py failed"
r=$(python3 "$TLIB/fleet_meter.py" report "$T/meter.json" "$cap" "$t_kill" "$t_promote" \
  "$(awk -v k="$t_kill" 'BEGIN { printf "%.3f", k - 1.5 }')" "$(awk -v p="$t_promote" 'BEGIN { printf "%.3f", p + 5.8 }')" 0.25)
note "failover: $r"
val() { sed -n "s/.*\"$1\": \([-0-9.]*\).*/\1/p" <<<"$r"; }
awk -v v="$(val max_1s)" 'BEGIN { exit !(v <= 1.10) }' ||
  fail "the fleet ran at $(val max_1s) x its cap over a 1 s window ($(val max_1s_at) s after the kill; want <= 1.10): $r"
awk -v v="$(val settle_mean)" 'BEGIN { exit !(v >= 0.98 && v <= 1.02) }' ||
  fail "the fleet's rate from 2 s after the promotion is $(val settle_mean) x its cap (want within 2%): $r"
awk -v v="$(val settle_max)" 'BEGIN { exit !(v <= 1.05) }' || fail "a 1 s window after the promotion ran above the cap: $r"

# Every host leased from the new primary, and says so (stat --fleet: the node it read,
# its agent's status file).
new="127.0.0.1:$REPLICA_PORT"
leased_all || fail "not every host leased after the failover"
views=()
for h in 1 2 3 4; do views+=("$(in_host "$h" "$CTL" stat --fleet web --json)") || fail "stat --fleet on host $h"; done
python3 - "$new" "${views[@]}" <<'EOP' || fail "the hosts' views after the failover: ${views[*]}"
import json, sys
new = sys.argv[1]
for v in sys.argv[2:]:
    d = json.loads(v)
    assert d["primary"] == new, d["primary"]
    a = d["agent"]
    assert a["primary"] == new, a
    assert a["failovers"] == 1 and a["last_failover_to"] == new, a
    assert a["last_failover_reason"] in ("connection lost", "+switch-master", "ROLE not master"), a
    assert a["fallback_total_ms"] > 0 and not a["on_fallback"], a
    assert d["live_hosts"] == 4, d["live_hosts"]
EOP
[ "$(timeout 5 redis-cli -p "$REPLICA_PORT" zcard 'bonsai:fleet:{web}:live' | tr -d '\r')" = 4 ] ||
  fail "the new primary does not count 4 live hosts"
grep -q "no lease" "$T/agent1.log" || fail "host 1's agent never said it lost the lease: $(cat "$T/agent1.log")"
p=$(in_host 2 "$CTL" stat --prometheus)
grep -q "^bonsai_fleet_store_primary_info{service=\"web\",host=\"h2\",primary=\"$new\"" <<<"$p" ||
  fail "Prometheus does not name the new primary: $(grep store_primary <<<"$p")"
grep -q '^bonsai_fleet_store_failovers_total{service="web",host="h2"} 1$' <<<"$p" || fail "Prometheus: $(grep failovers <<<"$p")"
exit 0
