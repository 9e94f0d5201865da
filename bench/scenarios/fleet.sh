#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet-wide caps through Redis (issue 37, docs/reference/fleet.md): N "hosts" on this machine, each
# its own namespace (BONSAI_SHM_PREFIX) with its fleet agent (--host-id), one service `web`
# capped at FLEET_CAP for all of them together, one dd writer per host, a private
# redis-server (127.0.0.1, no persistence). Per N it measures:
#   aggregate  -- every host busy: the hosts' total over FLEET_SECS / the cap, and Jain's index;
#   redis      -- lease calls per second (INFO commandstats, EVALSHA) against N / period;
#   converge   -- demand moved from host 1 to host 2 (its writer started as host 1's stops):
#                 periods until the first period-long window in which host 2 moves >= 90% of
#                 its share (the cap less the idle hosts' minimum): the window's start (the
#                 summary row) and its end;
#   outage     -- Redis SIGSTOPped for FLEET_OUTAGE s with every host busy: the largest
#                 aggregate over a 1 s window / the cap, the smallest host's 1 s rate / (cap/N),
#                 and the same aggregate after SIGCONT.
# Writes $RES/fleet.csv and summary rows. Env: FLEET_HOSTS (quick "4", full "4 16"),
# FLEET_SECS (quick 4, full 5), FLEET_OUTAGE (quick 3, full 5), FLEET_CAP (16MiB),
# FLEET_PERIOD (250ms).
source "$(dirname "$0")/../lib/common.sh"
service_bench fleet
command -v redis-server >/dev/null || { note "fleet: no redis-server (make deps): skipped"; exit 0; }
# Full 5 s windows and outage (10 before): 20 periods of 250 ms each, for aggregate / cap
# and Jain as for the hosts left without Redis.
if [ "$BENCH" = full ]; then HOSTS="4 16" SECS=5 OUTAGE=5; else HOSTS="4" SECS=4 OUTAGE=3; fi
HOSTS=${FLEET_HOSTS:-$HOSTS}; SECS=${FLEET_SECS:-$SECS}; OUTAGE=${FLEET_OUTAGE:-$OUTAGE}
CAP=${FLEET_CAP:-16MiB}; PERIOD=${FLEET_PERIOD:-250ms}
CAP_B=$(bytes_of "$CAP"); PERIOD_MS=${PERIOD%ms}
SAMPLE=$ROOT/tests/integration/lib/fleet_sample.py
CSV=$RES/fleet.csv
echo "hosts,cap_bps,period_ms,window_s,agg_ratio,jain,redis_calls_per_s,expected_calls_per_s,converge_periods,converge_window_end_periods,outage_s,outage_max_agg_ratio,outage_min_host_ratio,resumed_agg_ratio" >"$CSV"
BASE=$BONSAI_SHM_PREFIX
redis_pid=

cleanup_fleet() {
  [ -z "$redis_pid" ] || { kill -CONT "$redis_pid"; kill "$redis_pid"; } 2>/dev/null
  rm -rf /dev/shm/${BASE}h*bonsai* 2>/dev/null
  service_bench_cleanup
}
trap cleanup_fleet EXIT

rcli() { timeout 5 redis-cli -p "$port" "$@"; }
evalsha_calls() { rcli info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p' | tr -d '\r'; }
writer() {  # HOST
  env BONSAI_SHM_PREFIX="${BASE}h$1." "$CTL" run -c "$BENCH_TMP/fleet.yaml" -s web -- \
    dd if=/dev/zero of=/dev/null bs=16k count=100000000 status=none &
  wpid[$1]=$!
  pids+=($!)
}
# stats JSON EXPR: t (s), b (rows of per-host bytes); rate(h,i,j), agg(i,j), windows(secs).
stats() {
  python3 -c '
import json, sys
d = json.loads(sys.argv[1]); t = d["t"]; b = d["bytes"]; n = len(b[0])
def rate(h, i=0, j=-1): return (b[j][h - 1] - b[i][h - 1]) / (t[j] - t[i])
def agg(i=0, j=-1): return sum(rate(h, i, j) for h in range(1, n + 1))
def windows(secs):
    out = []
    for i in range(len(t)):
        for j in range(i + 1, len(t)):
            if t[j] - t[i] >= secs - 1e-3: out.append((i, j)); break
    return out
print(eval(sys.argv[2]))' "$1" "$2"
}

for n in $HOSTS; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$BENCH_TMP/redis.log" &
  redis_pid=$!
  for i in $(seq 100); do rcli ping 2>/dev/null | grep -q PONG && break; sleep 0.05; done
  cat >"$BENCH_TMP/fleet.yaml" <<EOC
version: 1
services:
  web:
    fleet: {store: "redis://127.0.0.1:$port", period: $PERIOD}
    limits:
      - {calls: [write], rate: $CAP/s}
EOC
  declare -a wpid=()
  for h in $(seq "$n"); do
    env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" fleet-agent --host-id "h$h" 2>>"$BENCH_TMP/agents.log" &
    pids+=($!)
  done
  sleep 0.3
  for h in $(seq "$n"); do env BONSAI_SHM_PREFIX="${BASE}h$h." "$CTL" load "$BENCH_TMP/fleet.yaml" >/dev/null; done
  for h in $(seq "$n"); do writer "$h"; done
  step=0.5; [ "$n" -gt 8 ] && step=1
  sleep 2
  c0=$(evalsha_calls); t0=$(date +%s%N)
  s=$(python3 "$SAMPLE" "$CTL" "$BASE" "$n" "$SECS" "$step")
  c1=$(evalsha_calls); t1=$(date +%s%N)
  agg=$(stats "$s" "round(agg() / $CAP_B, 4)")
  jain=$(stats "$s" "round(sum(rate(h) for h in range(1, n + 1)) ** 2 / (n * sum(rate(h) ** 2 for h in range(1, n + 1))), 4)")
  cps=$(calc "($c1 - $c0) / (($t1 - $t0) / 1e9)" "%.1f")
  want_cps=$(calc "$n * 1000 / $PERIOD_MS" "%.1f")

  # Demand moves from host 1 to host 2 (the others stay busy? no: idle, so host 2's share is large).
  for h in $(seq 3 "$n"); do kill "${wpid[$h]}" 2>/dev/null; done
  kill "${wpid[2]}" 2>/dev/null
  sleep 2  # host 1 alone holds nearly the whole cap
  kill "${wpid[1]}" 2>/dev/null
  writer 2
  read -r conv conv_end < <(python3 - "$CTL" "${BASE}h2." "$CAP_B" "$n" "$PERIOD_MS" <<'PY'
import json, os, subprocess, sys, time
ctl, prefix, cap, n, period_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
env = dict(os.environ, BONSAI_SHM_PREFIX=prefix)
def bytes_now():
    out = subprocess.run([ctl, "stat", "web", "--json"], env=env, capture_output=True, text=True).stdout
    try: return json.loads(out.splitlines()[0])["total"]["calls"].get("write", {}).get("bytes", 0)
    except (IndexError, ValueError): return 0
share = cap * (1 - (n - 1) / (20 * n))  # the idle hosts renew 1/20 of an equal share
t0 = time.monotonic(); pts = []
while time.monotonic() - t0 < 4:
    pts.append((time.monotonic() - t0, bytes_now())); time.sleep(0.02)
w = period_ms / 1000
for i, (t, b) in enumerate(pts):
    for t2, b2 in pts[i + 1:]:
        if t2 - t >= w:
            if (b2 - b) / (t2 - t) >= 0.9 * share:
                print(f"{t / w:.1f} {t2 / w:.1f}"); sys.exit(0)
            break
print("nan nan")
PY
)
  # Outage: every host busy, Redis stopped.
  kill "${wpid[2]}" 2>/dev/null
  for h in $(seq "$n"); do writer "$h"; done
  sleep 2
  kill -STOP "$redis_pid"
  s=$(python3 "$SAMPLE" "$CTL" "$BASE" "$n" "$OUTAGE" "$step")
  kill -CONT "$redis_pid"
  omax=$(stats "$s" "round(max(agg(i, j) for i, j in windows(1.0)) / $CAP_B, 4)")
  omin=$(stats "$s" "round(min(rate(h, i, j) for h in range(1, n + 1) for i, j in windows(1.0)) / ($CAP_B / n), 4)")
  sleep 1
  s=$(python3 "$SAMPLE" "$CTL" "$BASE" "$n" 2 "$step")
  resumed=$(stats "$s" "round(agg() / $CAP_B, 4)")

  kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; pids=()
  kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; redis_pid=
  rm -rf /dev/shm/${BASE}h*bonsai* 2>/dev/null
  echo "$n,$CAP_B,$PERIOD_MS,$SECS,$agg,$jain,$cps,$want_cps,$conv,$conv_end,$OUTAGE,$omax,$omin,$resumed" >>"$CSV"
  printf '  %2s hosts: aggregate %s x cap (Jain %s), %s lease calls/s (N/period %s), converged after %s periods (window ending at %s), outage %s s: max %s x cap, min host %s x cap/N, resumed %s x cap\n' \
    "$n" "$agg" "$jain" "$cps" "$want_cps" "$conv" "$conv_end" "$OUTAGE" "$omax" "$omin" "$resumed" >&2
  summary_row "fleet: $n hosts under one $CAP/s cap through Redis (${SECS} s): aggregate / cap, Jain" "$agg / $jain" "-" \
    "0.99..1.01 / >= 0.95" "$(verdict eval "le 0.99 '$agg' && le '$agg' 1.01 && le 0.95 '$jain'")"
  summary_row "fleet: $n hosts: Redis lease calls/s (N/period = $want_cps)" "$cps" "-" "<= 1.1 x N/period" \
    "$(verdict le "$cps" "$(calc "$want_cps * 1.1")")"
  summary_row "fleet: $n hosts: demand moved, periods until a period at >= 90% of the share begins" "$conv" "-" "<= 2" "$(verdict le "$conv" 2)"
  summary_row "fleet: $n hosts: Redis stopped ${OUTAGE} s: max aggregate / cap, min host / (cap/N)" "$omax / $omin" "-" \
    "<= 1 + 1/period-s / >= 0.95" "$(verdict eval "le '$omax' 1.07 && le 0.95 '$omin'")"
done
echo "fleet: $CSV" >&2
