#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Live control at a controller's pace (issue 36), one summary row each, CSV in
# $RES/ctl_churn.csv:
#  1. 8 threads of 64 KiB writes under a 4 MiB/s service cap while `bonsaictl set` applies
#     the same limit again ~100 times a second: within 1% of the cap;
#  2. 4 and 8 MiB/s alternating ~100 times a second: within 2% of the time-weighted mean
#     of the caps in force (tests/integration/lib/set_churn.py times each set);
#  3. what a `bonsaictl set` costs (wall time, process start included) and what an
#     install costs the library (the unit tests' '[runtime_limiter_bench]' case, built
#     alone as bench/bin/limiter_install_bench: rate-only and renumbering updates).
source "$(dirname "$0")/../lib/common.sh"
service_bench churn
# quick: ~300 sets a phase; full 10 s (20 before): 1,000 sets a phase hold the 1% bar
if [ "$BENCH" = full ]; then secs=10; else secs=3; fi
csv=$RES/ctl_churn.csv
echo "target,value,unit,limit,verdict" > "$csv"
here=$(cd "$BENCH_DIR/.." && pwd)
TW=$HELP/threads_write
gcc -std=gnu11 -O2 -o "$TW" "$here/tests/preload/threads_write.c" -lpthread || die "cannot build threads_write"
CHURN=(python3 "$here/tests/integration/lib/set_churn.py" "$CTL")

wait_attached() {  # SERVICE
  local i
  for i in $(seq 1 100); do
    "$CTL" stat "$1" --json 2>/dev/null | grep -q '"pid"' && return 0
    sleep 0.1
  done
  die "$1: no process attached after 10 s"
}
# churn NAME LIMIT...: "sets mean rate" over $secs s at 100 sets/s.
churn() {
  local name=$1 out
  shift
  "$CTL" run -s "$name" --scope service -l "$1" -- "$TW" 8 100000M /dev/null 64K >/dev/null 2>&1 &
  pids+=($!)
  wait_attached "$name"
  sleep 1
  out=$("${CHURN[@]}" "$name" write "$secs" 100 "$@") || die "set_churn failed"
  kill "${pids[@]}"; wait 2>/dev/null; pids=()
  echo "$(kv "$out" sets) $(kv "$out" mean) $(kv "$out" rate)"
}

read -r n mean rate < <(churn same 'write=4MiB/s')
e=$(err_pct "$rate" "$mean"); v=$(verdict abs_le "$e" 1); same_e=$e
echo "same_limit_100hz_error,$e,%,1,$v" >> "$csv"
summary_row "ctl churn: 8 threads x 64 KiB, 4 MiB/s re-set $n times in ${secs} s" "$(calc "$rate / 1048576" %.3f) MiB/s (${e}%)" "-" "within 1%" "$v"

read -r n mean rate < <(churn alt 'write=4MiB/s' 'write=8MiB/s')
e=$(err_pct "$rate" "$mean"); v=$(verdict abs_le "$e" 2); alt_e=$e
echo "alternating_100hz_error,$e,%,2,$v" >> "$csv"
summary_row "ctl churn: 4 and 8 MiB/s alternating, $n sets in ${secs} s (mean $(calc "$mean / 1048576" %.3f))" "$(calc "$rate / 1048576" %.3f) MiB/s (${e}%)" "-" "within 2%" "$v"

# What a set costs: wall time of 50 sets on an idle service.
# A member attaches at its first interposed call: the redirection's open and close.
"$CTL" run -s cost -l 'write=4MiB/s' -- sh -c 'exec 3< /dev/null; exec 3<&-; exec sleep 60' &
pids+=($!)
wait_attached cost
: > "$BENCH_TMP/set_ms"
for i in $(seq 1 50); do
  t0=$(date +%s%N)
  "$CTL" set cost "write=$(( i % 2 ? 8 : 4 ))MiB/s" >/dev/null || die "set failed"
  echo "$(( ($(date +%s%N) - t0) / 1000 ))" | awk '{ printf "%.3f\n", $1 / 1000 }' >> "$BENCH_TMP/set_ms"
done
kill "${pids[@]}"; wait 2>/dev/null; pids=()
set_p50=$(sort -g "$BENCH_TMP/set_ms" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
echo "set_wall_p50,$set_p50,ms,-,-" >> "$csv"
# The unit tests' install benchmark, built alone for the bench (Makefile: LIMITER_BENCH);
# the whole unit_tests has it too when this script runs by itself.
ibench=$BUILD/bench/bin/limiter_install_bench
[ -x "$ibench" ] || ibench=$BUILD/unit_tests
install=$("$ibench" '[runtime_limiter_bench]' 2>/dev/null | sed -n 's/^install_ns //p')
echo "install_ns,$install,ns,-,-" >> "$csv"
summary_row "ctl churn: one bonsaictl set (wall, process start included); library install" "p50 ${set_p50} ms; ${install:-?} ns" "-" "-" "-"
echo "ctl churn: same limit re-set at 100/s ${same_e}%, 4/8 alternating ${alt_e}% of the mean in force;" \
  "set p50 ${set_p50} ms; install ${install:-?}"
