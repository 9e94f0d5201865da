#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a Redis failover costs a fleet cap (docs/reference/fleet.md, "Through a failover"): a
# primary and a replica redis-server and three redis-sentinel on 127.0.0.1 (quorum 2,
# down-after FLEET_FO_DOWN ms), N "hosts" (FLEET_FO_HOSTS, default 100: namespaces, an
# agent each with --host-id, store: redis+sentinel://...) under one FLEET_FO_CAP cap,
# every host's dd busy writing into its own FIFO, read by one meter
# (tests/integration/lib/fleet_meter.py: bytes where they land, 50 ms bins). After
# FLEET_FO_WARM s of steady running the primary is SIGKILLed; the Sentinels promote
# the replica. Reported: the Sentinels' promotion after the kill, the fleet's highest
# and lowest 1 s window / cap over the whole run, the cap-seconds over and under the cap
# from 1 s before the kill to 4 s after the promotion (period-long bins) beside the same
# over as long a window of steady running before it (the measurement's own noise), the
# mean of the 1 s windows from 2 s after the promotion, and whether every host ends
# leased from the new primary. Writes $RES/fleet_failover.csv and summary rows.
source "$(dirname "$0")/../lib/common.sh"
service_bench fleet_failover
for c in redis-server redis-sentinel redis-cli python3 mkfifo; do
  command -v "$c" >/dev/null || { note "fleet_failover: no $c (make deps): skipped"; exit 0; }
done
N=${FLEET_FO_HOSTS:-100}; CAP=${FLEET_FO_CAP:-16MiB}; PERIOD=${FLEET_FO_PERIOD:-250ms}
DOWN=${FLEET_FO_DOWN:-1000}; WARM=${FLEET_FO_WARM:-12}
CAP_B=$(bytes_of "$CAP"); PERIOD_S=$(calc "${PERIOD%ms} / 1000")
METER=$ROOT/tests/integration/lib/fleet_meter.py
CSV=$RES/fleet_failover.csv
BASE=$BONSAI_SHM_PREFIX
W=$BENCH_TMP/fo
mkdir -p "$W/m"
cleanup_fo() {
  local p
  for p in "${pids[@]+"${pids[@]}"}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]+"${pids[@]}"}"; do wait "$p" 2>/dev/null; done
  rm -rf /dev/shm/${BASE}h*bonsai* 2>/dev/null
  service_bench_cleanup
}
trap cleanup_fo EXIT
up() {  # PORT: a Redis or Sentinel answers PING (within 5 s)
  local i
  for i in $(seq 100); do timeout 2 redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.05; done
  return 1
}

read -r P R S1 S2 S3 < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(5)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
redis-server --port "$P" --bind 127.0.0.1 --save '' --appendonly no --dir "$W" --logfile "$W/primary.log" &
primary=$!; pids+=($!)
up "$P" || die "fleet_failover: the primary did not start"
redis-server --port "$R" --bind 127.0.0.1 --save '' --appendonly no --dir "$W" --logfile "$W/replica.log" \
  --replicaof 127.0.0.1 "$P" &
pids+=($!)
for i in $(seq 100); do
  timeout 5 redis-cli -p "$R" info replication 2>/dev/null | grep -q master_link_status:up && break
  [ "$i" = 100 ] && die "fleet_failover: the replica never synced"
  sleep 0.1
done
SP=("" "$S1" "$S2" "$S3")
for i in 1 2 3; do
  {
    echo "port ${SP[$i]}"; echo "bind 127.0.0.1"; echo "dir $W"; echo "logfile $W/sentinel$i.log"
    echo "sentinel myid $(printf '%040d' "$i")"
    echo "sentinel monitor bonsai 127.0.0.1 $P 2"
    echo "sentinel down-after-milliseconds bonsai $DOWN"
    echo "sentinel failover-timeout bonsai 5000"
    echo "sentinel known-replica bonsai 127.0.0.1 $R"
    for j in 1 2 3; do [ "$j" = "$i" ] || echo "sentinel known-sentinel bonsai 127.0.0.1 ${SP[$j]} $(printf '%040d' "$j")"; done
  } > "$W/sentinel$i.conf"
  redis-sentinel "$W/sentinel$i.conf" &
  pids+=($!)
done
for i in 1 2 3; do up "${SP[$i]}" || die "fleet_failover: Sentinel $i did not start"; done
cat > "$W/fleet.yaml" <<EOC
version: 1
services:
  web:
    fleet:
      store: redis+sentinel://127.0.0.1:$S1,127.0.0.1:$S2,127.0.0.1:$S3/bonsai
      period: $PERIOD
      expected_hosts: $N
    limits:
      - calls: [write]
        rate: $CAP/s
EOC
for h in $(seq "$N"); do
  env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" fleet-agent --host-id "h$h" 2>>"$W/agent$h.log" &
  pids+=($!)
done
sleep 1
loads=()
for h in $(seq "$N"); do  # ten at a time
  env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" load "$W/fleet.yaml" >/dev/null 2>>"$W/load.log" &
  loads+=($!)
  if [ "${#loads[@]}" = 10 ] || [ "$h" = "$N" ]; then wait "${loads[@]}" || die "fleet_failover: load failed: $(tail -3 "$W/load.log")"; loads=(); fi
done
for h in $(seq "$N"); do mkfifo "$W/m/w$h"; done
python3 "$METER" meter "$W/m" "$N" $((WARM + 40)) 0.05 "$W/meter.json" &
meter=$!; pids+=($!)
sleep 0.5
for h in $(seq "$N"); do
  env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" run -c "$W/fleet.yaml" -s web -- \
    dd if=/dev/zero of="$W/m/w$h" bs=4k count=100000000 status=none 2>>"$W/writers.log" &
  pids+=($!)
done
sleep "$WARM"
# A machine too loaded for down-after makes the Sentinels fail over by themselves.
[ "$(timeout 5 redis-cli -p "$S1" sentinel get-master-addr-by-name bonsai | tr -d '\r' | sed -n 2p)" = "$P" ] ||
  die "fleet_failover: the Sentinels failed over during the warm-up (a loaded machine? raise FLEET_FO_DOWN)"
t_kill=$(date +%s.%N)
kill -9 "$primary"
t_promote=
for i in $(seq 300); do
  if [ "$(timeout 5 redis-cli -p "$S1" sentinel get-master-addr-by-name bonsai | tr -d '\r' | sed -n 2p)" = "$R" ]; then
    t_promote=$(date +%s.%N); break
  fi
  sleep 0.1
done
[ -n "$t_promote" ] || die "fleet_failover: no promotion within 30 s"
sleep 6
leased=0 from_new=0
for h in $(seq "$N"); do
  v=$(env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" stat --fleet web --json 2>/dev/null)
  grep -q "\"agent\":{[^}]*\"primary\":\"127.0.0.1:$R\"" <<<"$v" && from_new=$((from_new + 1))
  env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" stat web --json 2>/dev/null | grep -q '"state":"leased"' && leased=$((leased + 1))
done
touch "$W/m/stop"
wait "$meter" || die "fleet_failover: the meter failed"
cp "$W/meter.json" "$RES/fleet_failover_meter.json"  # the bins, for a closer look
echo "$t_kill $t_promote" > "$RES/fleet_failover_times"
r=$(python3 "$METER" report "$W/meter.json" "$CAP_B" "$t_kill" "$t_promote" "$(calc "$t_kill - $WARM + 3" %.3f)" \
  "$(calc "$t_promote + 5.5" %.3f)" "$PERIOD_S")
j() { sed -n "s/.*\"$1\": \([-0-9.]*\).*/\1/p" <<<"$r"; }
echo "hosts,cap_bps,period_s,down_after_ms,promote_after_kill_s,max_1s,min_1s,settle_mean,over_cap_s,under_cap_s,base_over_cap_s,base_under_cap_s,cost_window_s,leased,leased_from_new" >"$CSV"
echo "$N,$CAP_B,$PERIOD_S,$DOWN,$(j promote_after_kill_s),$(j max_1s),$(j min_1s),$(j settle_mean),$(j over_cs),$(j under_cs),$(j base_over_cs),$(j base_under_cs),$(j cost_window_s),$leased,$from_new" >>"$CSV"
note "fleet_failover: $r; leased $leased/$N, from the new primary $from_new/$N"
summary_row "fleet: $N hosts, $CAP/s cap, primary killed (down-after $DOWN ms): promoted after (s), max 1 s / cap" \
  "$(j promote_after_kill_s) / $(j max_1s)" "-" "max <= 1.10" "$(verdict le "$(j max_1s)" 1.10)"
summary_row "fleet: $N hosts failover: cap-seconds over / under the cap (steady: $(j base_over_cs) / $(j base_under_cs))" \
  "$(j over_cs) / $(j under_cs)" "-" "over <= steady + 0.1" "$(verdict le "$(j over_cs)" "$(calc "$(j base_over_cs) + 0.1")")"
summary_row "fleet: $N hosts failover: 1 s windows from 2 s after the promotion / cap, hosts leased from the new primary" \
  "$(j settle_mean) / $from_new" "-" "0.98..1.02 / $N" \
  "$(verdict eval "le 0.98 '$(j settle_mean)' && le '$(j settle_mean)' 1.02 && [ $from_new = $N ]")"
echo "fleet_failover: $CSV" >&2
