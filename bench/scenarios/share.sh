#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# N processes sharing one service cap (scope service, `bonsaictl run`): does the service
# as a whole hold the cap, and how evenly do its processes share it? Each process is a dd of
# 4 KiB writes to /dev/null; the rate is the service's total between two `bonsaictl stat`
# snapshots (their own timestamps), the fairness Jain's index (sum x)^2 / (n sum x^2) and
# min/max of the processes' bytes in the same window.
# Writes $RES/share.csv and summary rows. Env: SHARE_N (quick "4 64", full "4 16 64"),
# SHARE_CAP (16MiB), SHARE_SECS (quick 2, full 5).
source "$(dirname "$0")/../lib/common.sh"
service_bench share
# Full 5 s (10 before): the error and Jain's index of 4-64 processes settle in the first second.
if [ "$BENCH" = full ]; then NS="4 16 64" SECS=5; else NS="4 64" SECS=2; fi
NS=${SHARE_N:-$NS}; SECS=${SHARE_SECS:-$SECS}; CAP=${SHARE_CAP:-16MiB}
CAP_B=$(bytes_of "$CAP")
CSV=$RES/share.csv
echo "processes,cap,cap_bps,window_s,rate_bps,err_pct,jain,min_over_max,min_bps,max_bps" >"$CSV"

attached() {
  "$CTL" stat "$1" --json 2>/dev/null | python3 -c '
import json, sys
line = sys.stdin.readline()
print(len(json.loads(line)["processes"]) if line.strip() else 0)'
}

note "share ($BENCH): $NS processes in one service, $CAP, ${SECS} s window"
for n in $NS; do
  svc=share$n
  for i in $(seq "$n"); do
    "$CTL" run -s "$svc" --scope service -l "write=$CAP/s" -- dd if=/dev/zero of=/dev/null bs=4k count=100000000 status=none &
    pids+=($!)
  done
  for i in $(seq 300); do [ "$(attached "$svc")" -ge "$n" ] && break; sleep 0.1; done
  sleep 1  # every process past its first calls
  "$CTL" stat "$svc" --json >"$BENCH_TMP/a.json"
  sleep "$SECS"
  "$CTL" stat "$svc" --json >"$BENCH_TMP/b.json"
  kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=()
  "$CTL" rm --force "$svc" >/dev/null 2>&1
  line=$(python3 - "$BENCH_TMP/a.json" "$BENCH_TMP/b.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
secs = (b["time_unix_ns"] - a["time_unix_ns"]) / 1e9
moved = b["total"]["calls"]["write"]["bytes"] - a["total"]["calls"]["write"]["bytes"]
before = {p["pid"]: p["calls"].get("write", {}).get("bytes", 0) for p in a["processes"]}
per = [p["calls"].get("write", {}).get("bytes", 0) - before.get(p["pid"], 0) for p in b["processes"] if p["pid"] in before]
jain = sum(per) ** 2 / (len(per) * sum(x * x for x in per)) if per and any(per) else float("nan")
print(f"{secs:.3f} {moved / secs:.1f} {jain:.4f} {min(per) / max(per):.3f} {min(per) / secs:.1f} {max(per) / secs:.1f} {len(per)}")
PY
)
  read -r win rate jain mm mn mx seen <<<"$line"
  err=$(err_pct "$rate" "$CAP_B")
  echo "$n,$CAP,$CAP_B,$win,$rate,$err,$jain,$mm,$mn,$mx" >>"$CSV"
  printf '  %3s processes (%s seen in both snapshots): %s B/s, err %s%%, Jain %s, min/max %s\n' "$n" "$seen" "$rate" "$err" "$jain" "$mm" >&2
  summary_row "$n processes share one $CAP/s service cap (${SECS} s): error / Jain's index (min/max $mm)" \
    "$err% / $jain" "-" "<= 0.5% / >= 0.95" "$(verdict eval "abs_le '$err' 0.5 && le 0.95 '$jain'")"
done
echo "share: $CSV" >&2
