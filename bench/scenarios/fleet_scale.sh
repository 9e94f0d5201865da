#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The lease script at fleet scale (issue 50, docs/reference/fleet.md "Sizing"): N simulated hosts
# call the real script (read from bonsaictl/fleet/fleet_script.cc, SCRIPT LOAD, EVALSHA)
# over FLEET_SCALE_CONNS real connections to a private redis-server (127.0.0.1, no
# persistence), each once per FLEET_SCALE_PERIOD at its own phase, every host busy (it
# asks for the whole period's cap and uses what it is granted). After a warm-up of
# FLEET_SCALE_WARMUP s it measures over FLEET_SCALE_SECS s:
#   ratio      -- the fleet's use over its cap: every busy host runs at its last grant /
#                 period; their sum, sampled every 50 ms and averaged, / the cap (1.00 is
#                 exact); also its lowest and highest sample, and the units granted in the
#                 window / (cap x seconds) (below the use when calls bunch: the store's
#                 GCRA does not carry unused time forward);
#   redis_cpu  -- Redis's CPU over the window, in cores (utime + stime, /proc/PID/stat);
#   lag        -- how late the driver made its latest call (it must keep up for the
#                 numbers to mean N hosts).
# The driver (tests/integration/lib/fleet_sim.py, Python 3 stdlib) shares this machine's
# cores with Redis. Env: FLEET_SCALE_HOSTS (quick "1000", full "1000 5000 10000"),
# FLEET_SCALE_SECS (quick 20, full 20), FLEET_SCALE_WARMUP (5), FLEET_SCALE_PERIOD (1000
# ms), FLEET_SCALE_CONNS (16). Writes $RES/fleet_scale.csv and summary rows; the last
# line of its output is `hosts=N ratio=R redis_cpu=C` for the largest N.
source "$(dirname "$0")/../lib/common.sh"
command -v redis-server >/dev/null || { note "fleet_scale: no redis-server (make deps): skipped"; exit 0; }
# Full 20 s windows (60 before), as the script alone in quick: 20 periods of every host,
# 200,000 calls at 10,000 hosts.
if [ "$BENCH" = full ]; then HOSTS="1000 5000 10000" SECS=20; else HOSTS="1000" SECS=20; fi
HOSTS=${FLEET_SCALE_HOSTS:-$HOSTS}; SECS=${FLEET_SCALE_SECS:-$SECS}
WARMUP=${FLEET_SCALE_WARMUP:-5}; PERIOD_MS=${FLEET_SCALE_PERIOD:-1000}; CONNS=${FLEET_SCALE_CONNS:-16}
CAP=$((100 * 1024 * 1024))
CSV=$RES/fleet_scale.csv
echo "hosts,period_ms,window_s,conns,ratio,ratio_min,ratio_max,grant_ratio,redis_cpu_cores,calls_per_s,driver_lag_max_s,errors" >"$CSV"
redis_pid=
trap '[ -z "$redis_pid" ] || kill "$redis_pid" 2>/dev/null; [ "${BENCH_TMP_OWNER:-}" != $$ ] || rm -rf "$BENCH_TMP"' EXIT
last=
for n in $HOSTS; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$BENCH_TMP/redis.log" &
  redis_pid=$!
  for i in $(seq 100); do timeout 2 redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  out=$(python3 "$ROOT/tests/integration/lib/fleet_sim.py" --port "$port" --script "$ROOT/bonsaictl/fleet/fleet_script.cc" \
    --mode busy --hosts "$n" --conns "$CONNS" --period-ms "$PERIOD_MS" --cap "$CAP" --warmup "$WARMUP" --secs "$SECS" \
    --redis-pid "$redis_pid") || die "fleet_sim failed at $n hosts"
  kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; redis_pid=
  get() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$out" "$1"; }
  ratio=$(get ratio); cpu=$(get redis_cpu); cps=$(get calls_per_s); lag=$(get lag_max_s); errs=$(get errors)
  rmin=$(get ratio_min); rmax=$(get ratio_max); gratio=$(get grant_ratio)
  echo "$n,$PERIOD_MS,$SECS,$CONNS,$ratio,$rmin,$rmax,$gratio,$cpu,$cps,$lag,$errs" >>"$CSV"
  printf '  %5s hosts, period %s ms: ratio %s (%s..%s; granted %s), redis %s cores, %s calls/s, driver lag max %s s, %s errors\n' \
    "$n" "$PERIOD_MS" "$ratio" "$rmin" "$rmax" "$gratio" "$cpu" "$cps" "$lag" "$errs" >&2
  summary_row "fleet scale: $n hosts at ${PERIOD_MS} ms, every one busy: fleet use / cap" "$ratio" "-" "0.99..1.01" \
    "$(verdict eval "le 0.99 '$ratio' && le '$ratio' 1.01 && [ '$errs' = 0 ]")"
  summary_row "fleet scale: $n hosts at ${PERIOD_MS} ms: Redis CPU (cores)" "$cpu" "-" "<= 0.25 (1,000 hosts)" \
    "$(verdict le "$cpu" "$(calc "0.25 * $n / 1000")")"
  last="hosts=$n ratio=$ratio redis_cpu=$cpu"
done
echo "fleet_scale: $CSV" >&2
echo "$last"
