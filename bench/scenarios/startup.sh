#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Start-up cost (issue #34): every process of a service pays for the library at exec.
# Two measurements, each with its variants interleaved round by round (a busy moment of
# the machine hits them alike), medians of the rounds, ratios to raw:
#   spawn: spawn_loop starts /bin/true STARTS times per round under each environment, the
#          variants in turn start by start (-i: a slow minute of the machine hits all alike):
#          raw; LD_PRELOAD only; LD_PRELOAD + BONSAI_LIMITS; and what `bonsaictl run`
#          hands its children (LD_PRELOAD, BONSAI_SERVICE of an existing service, which
#          each process attaches to). The driver itself runs without the library.
#   shell: sh runs /bin/true LOOP times in a while loop: raw; LD_PRELOAD=libbonsai.so
#          (sh and every child under the library); `bonsaictl run -s SERVICE -- sh ...`.
# Quick (`make bench`): 100 starts x 5 rounds and 100 x 3 (~4 s idle); full: 400 x 15
# and 400 x 7. STARTS, ROUNDS, LOOP, LOOP_ROUNDS override. Writes startup.csv, a summary row.
source "$(dirname "$0")/../lib/common.sh"
build_helpers
service_bench startup

if [ "$BENCH" = full ]; then
  STARTS=${STARTS:-400} ROUNDS=${ROUNDS:-15} LOOP=${LOOP:-400} LOOP_ROUNDS=${LOOP_ROUNDS:-7}
else
  STARTS=${STARTS:-100} ROUNDS=${ROUNDS:-5} LOOP=${LOOP:-100} LOOP_ROUNDS=${LOOP_ROUNDS:-3}
fi
TRUE=/bin/true
SVC=startup
LIMITS='writes=1GiB/s'
CSV=$RES/startup.csv
# cpu_ms_per_start: the started processes' own CPU time (spawn only): the work a start
# costs, steadier than the wall time when other work shares the machine.
echo "case,variant,rounds,ms_per_start,ratio_to_raw,cpu_ms_per_start,cpu_ratio_to_raw" >"$CSV"
# The service the `service` and `bonsaictl run` variants join (made once, no limits).
"$CTL" run -s "$SVC" -- "$TRUE" || die "bonsaictl run -s $SVC failed"
unset LD_PRELOAD BONSAI_LIMITS BONSAI_SERVICE BONSAI_SHM_FD BONSAI_SHM_UID

# ---- spawn: /bin/true under each environment ----
note "startup ($BENCH): $ROUNDS rounds of $STARTS starts of $TRUE, 4 environments interleaved"
# BONSAI_SHM_PREFIX (service_bench's) only where a service is joined: any BONSAI_*
# setting is work at start (it is handed down at exec).
# Other BONSAI_* variables of the caller's (BONSAI_BUILD, a test's) are removed from
# every variant: each is a setting the library reads and hands down, ~0.07x per start
# before issue #34's third pass.
P=BONSAI_SHM_PREFIX
OTHERS=$(env | sed -n 's/^\(BONSAI_[A-Za-z0-9_]*\)=.*/\1/p' | { grep -vx "$P" || true; } | tr '\n' ' ')
"$HELP/spawn_loop" -i -n "$STARTS" -r "$ROUNDS" -v "raw $P $OTHERS" -v "preload $P $OTHERS LD_PRELOAD=$LIB" \
  -v "limits $P $OTHERS LD_PRELOAD=$LIB BONSAI_LIMITS=$LIMITS" \
  -v "service $OTHERS LD_PRELOAD=$LIB BONSAI_SERVICE=$SVC BONSAI_SHM_UID=$(id -u)" -- "$TRUE" >"$BENCH_TMP/spawn.txt" ||
  die "spawn_loop failed"
while read -r label ms ratio cpu cpu_ratio rounds; do
  echo "spawn,$label,${rounds#rounds=},${ms#ms_per_start=},${ratio#ratio=},${cpu#cpu_ms=},${cpu_ratio#cpu_ratio=}" >>"$CSV"
done <"$BENCH_TMP/spawn.txt"

# ---- shell: a loop of /bin/true in sh ----
# run_loop VARIANT: prints ms per /bin/true of one loop.
UNSET_OTHERS=$(for n in $OTHERS; do printf -- '-u %s ' "$n"; done)
LOOP_SH="i=0; while [ \$i -lt $LOOP ]; do $TRUE; i=\$((i + 1)); done"
run_loop() {
  local t0 t1
  t0=$(date +%s%N)
  case $1 in
    raw) env -u $P $UNSET_OTHERS sh -c "$LOOP_SH" ;;
    preload) env -u $P $UNSET_OTHERS LD_PRELOAD="$LIB" sh -c "$LOOP_SH" ;;
    bonsaictl_run) "$CTL" run -s "$SVC" -- sh -c "$LOOP_SH" ;;
  esac || return 1
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" -v n="$LOOP" 'BEGIN { printf "%.4f\n", (b - a) / 1e6 / n }'
}
note "startup: $LOOP_ROUNDS rounds of a sh loop of $LOOP x $TRUE: raw, preload, bonsaictl run"
RUNS=$BENCH_TMP/shell_runs.txt
: >"$RUNS"
for r in $(seq "$LOOP_ROUNDS"); do
  for v in raw preload bonsaictl_run; do
    ms=$(run_loop "$v") || die "the $v loop failed"
    echo "$v $ms" >>"$RUNS"
  done
done
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
raw_ms=$(awk '$1 == "raw" { print $2 }' "$RUNS" | median)
for v in raw preload bonsaictl_run; do
  ms=$(awk -v v="$v" '$1 == v { print $2 }' "$RUNS" | median)
  echo "shell,$v,$LOOP_ROUNDS,$ms,$(calc "$ms / $raw_ms" %.3f),," >>"$CSV"
done

# ---- report ----
get() { awk -F, -v c="$1" -v v="$2" -v f="$3" '$1 == c && $2 == v { print $f }' "$CSV"; }
while IFS=, read -r c v n ms ratio cpu cpu_ratio; do
  [ "$c" = case ] && continue
  printf '  %-6s %-14s %8s ms per start  ratio %s%s  (%s rounds)\n' "$c" "$v" "$ms" "$ratio" \
    "${cpu:+; CPU $cpu ms, ratio $cpu_ratio}" "$n" >&2
done <"$CSV"
pre=$(get spawn preload 5)
summary_row "process start, $TRUE x$STARTS (wall time, ratio to raw $(get spawn raw 4) ms)" \
  "preload $pre, limits $(get spawn limits 5), service $(get spawn service 5); sh loop: preload $(get shell preload 5), bonsaictl run $(get shell bonsaictl_run 5)" \
  "-" "preload <= 1.15" "$(verdict le "$pre" 1.15)"
svc=$(get spawn service 5)
summary_row "process start as a member of a running service, $TRUE x$STARTS (wall time / raw)" "$svc" "-" \
  "service <= 1.15" "$(verdict le "$svc" 1.15)"
summary_row "process start, $TRUE x$STARTS (CPU time, ratio to raw $(get spawn raw 6) ms)" \
  "preload $(get spawn preload 7), limits $(get spawn limits 7), service $(get spawn service 7)" "-" "(info)" "-"
echo "startup: $CSV" >&2
