#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The control plane's three targets (issue 3), measured and printed, one summary row
# each, CSV in $RES/ctl_targets.csv:
#  1. a live `bonsaictl set` reaches a running process within 10 ms (set --wait: from
#     the limits being published to the process having installed them);
#  2. `bonsaictl stat --json` on a service with 64 attached processes answers in
#     under 50 ms (wall time of the whole command, process start included);
#  3. two processes in scope service hold a shared cap to within 0.5% (rate from the
#     service totals between two stat snapshots, timed by their own timestamps).
source "$(dirname "$0")/../lib/common.sh"
service_bench ctl
# Full: the shared cap over 10 s (20 before): 80 MiB at 8 MiB/s, the 0.5% bar 400 KiB, 40 buckets' depth.
if [ "$BENCH" = full ]; then sets=100 stats=50 window=10; else sets=20 stats=15 window=3; fi
csv=$RES/ctl_targets.csv
echo "target,value,unit,limit,verdict" > "$csv"

stat_json() { "$CTL" stat "$1" --json 2>/dev/null; }
# attached SERVICE: processes attached now (0 while `run` has not made the segment yet).
attached() {
  stat_json "$1" | python3 -c '
import json, sys
line = sys.stdin.readline()
print(len(json.loads(line)["processes"]) if line.strip() else 0)'
}
wait_attached() {  # SERVICE N
  local i
  for i in $(seq 1 200); do
    [ "$(attached "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  die "$1: fewer than $2 processes attached after 20 s"
}
# pctl P: the P-th percentile of the numbers on stdin.
pctl() { sort -g | awk -v p="$1" '{ v[NR] = $1 } END { i = int((NR - 1) * p / 100) + 1; print v[i] }'; }

# ---- 1. live set ----
"$CTL" run -s setlat -l 'write=4MiB/s' -- dd if=/dev/zero of=/dev/null bs=4k count=100000000 status=none &
pids+=($!)
wait_attached setlat 1
: > "$BENCH_TMP/set_ms"
for i in $(seq 1 "$sets"); do
  rate=$(( i % 2 ? 8 : 4 ))
  out=$("$CTL" set --wait=1000 setlat "write=${rate}MiB/s") || die "set --wait: $out"
  sed -n 's/.* in \([0-9.]*\) ms$/\1/p' <<<"$out" >> "$BENCH_TMP/set_ms"
  sleep 0.05
done
kill "${pids[@]}"; wait 2>/dev/null; pids=()
set_p50=$(pctl 50 < "$BENCH_TMP/set_ms"); set_max=$(pctl 100 < "$BENCH_TMP/set_ms")
v=$(verdict le "$set_max" 10)
echo "set_reaches_process_max,$set_max,ms,10,$v" >> "$csv"
summary_row "ctl: live set reaches process ($sets sets, p50 ${set_p50} ms)" "max ${set_max} ms" "-" "<= 10 ms" "$v"

# ---- 2. stat with 64 attached processes ----
for i in $(seq 1 64); do
  # A member attaches at its first interposed call: the redirection's open and close.
  "$CTL" run -s many -- sh -c 'exec 3< /dev/null; exec 3<&-; exec sleep 120' &
  pids+=($!)
done
wait_attached many 64
: > "$BENCH_TMP/stat_ms"
for i in $(seq 1 "$stats"); do
  t0=$(date +%s%N)
  stat_json many > "$BENCH_TMP/stat.json" || die "stat failed"
  echo "$(( ($(date +%s%N) - t0) / 1000 ))" | awk '{ printf "%.3f\n", $1 / 1000 }' >> "$BENCH_TMP/stat_ms"
done
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"]))' "$BENCH_TMP/stat.json")
kill "${pids[@]}"; wait 2>/dev/null; pids=()
stat_p50=$(pctl 50 < "$BENCH_TMP/stat_ms"); stat_p90=$(pctl 90 < "$BENCH_TMP/stat_ms")
v=$(verdict le "$stat_p50" 50)
echo "stat_64_processes_p50,$stat_p50,ms,50,$v" >> "$csv"
summary_row "ctl: stat --json, $n processes attached (p90 ${stat_p90} ms)" "p50 ${stat_p50} ms" "-" "< 50 ms" "$v"

# ---- 3. shared cap, scope service ----
cap=$((8 * 1048576))
for i in 1 2; do
  "$CTL" run -s shared --scope service -l "write=8MiB/s" -- dd if=/dev/zero of=/dev/null bs=4k count=100000000 status=none &
  pids+=($!)
done
wait_attached shared 2
sleep 1
stat_json shared > "$BENCH_TMP/a.json"
sleep "$window"
stat_json shared > "$BENCH_TMP/b.json"
kill "${pids[@]}"; wait 2>/dev/null; pids=()
read -r rate share < <(python3 - "$BENCH_TMP/a.json" "$BENCH_TMP/b.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
secs = (b["time_unix_ns"] - a["time_unix_ns"]) / 1e9
moved = b["total"]["calls"]["write"]["bytes"] - a["total"]["calls"]["write"]["bytes"]
per = [p["calls"]["write"]["bytes"] for p in b["processes"]]
print(f"{moved / secs:.1f} {min(per) / max(sum(per), 1):.3f}")
PY
)
e=$(err_pct "$rate" "$cap")
v=$(verdict abs_le "$e" 0.5)
echo "shared_cap_error,$e,%,0.5,$v" >> "$csv"
summary_row "ctl: 2 processes share one 8 MiB/s cap (${window} s, smaller share $share)" "$(calc "$rate / 1048576" %.3f) MiB/s (${e}%)" "-" "within 0.5%" "$v"

echo "ctl targets: set reaches process p50 ${set_p50} ms max ${set_max} ms;" \
  "stat with $n processes p50 ${stat_p50} ms p90 ${stat_p90} ms;" \
  "shared cap $(calc "$rate / 1048576" %.3f) MiB/s for 8 MiB/s = ${e}% (smaller share $share)"
