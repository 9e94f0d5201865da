#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The start cost of a service's static children (issue 49, item 9): a shell in a service
# runs a static program (busybox true) LOOP times. Each such child is supervised; the
# first starts the service's supervisor through bonsaictl's trampoline (sv-exec: an exec
# of bonsaictl, a filter built, two forks, ~8.5 ms), the others join it (abi/sv_join.h:
# the filter it sends loaded and the listener handed back from the library, no exec of
# bonsaictl). Variants, interleaved round by round, medians of the rounds:
#   raw:     sh (no library) runs the loop;
#   service: `bonsaictl run -s SVC -l write=1GiB/s -- sh ...`: the same loop in a service
#            shell, timed by the shell from its first child on (cold: the trampoline's
#            start included) and from its second (warm: every child joins).
# Target: warm <= 1.5x raw per start. Quick: 100 starts x 5 rounds (~3 s); full: 400 x 11.
source "$(dirname "$0")/../lib/common.sh"
service_bench sv_start
BB=$(command -v busybox) || die "busybox (busybox-static: make deps) is not installed"
file -L "$BB" 2>/dev/null | grep -q 'statically linked' || note "$BB is not static: the service variant is not supervised"
if [ "$BENCH" = full ]; then LOOP=${LOOP:-400} ROUNDS=${ROUNDS:-11}; else LOOP=${LOOP:-100} ROUNDS=${ROUNDS:-3}; fi
CSV=$RES/sv_start.csv
echo "variant,rounds,ms_per_start,ratio_to_raw" >"$CSV"
# The shell times itself: "COLD_NS WARM_NS" (cold: LOOP starts; warm: LOOP - 1, after the first).
LOOP_SH="t0=\$(date +%s%N); $BB true; t1=\$(date +%s%N); i=1; while [ \$i -lt $LOOP ]; do $BB true; i=\$((i + 1)); done;
t2=\$(date +%s%N); echo \$((t2 - t0)) \$((t2 - t1))"
RUNS=$BENCH_TMP/sv_start_runs.txt
: >"$RUNS"
note "sv_start ($BENCH): $ROUNDS rounds of a sh loop of $LOOP x busybox true: raw, service"
for r in $(seq "$ROUNDS"); do
  out=$(env -u BONSAI_SHM_PREFIX sh -c "$LOOP_SH") || die "the raw loop failed"
  echo "raw ${out% *}" >>"$RUNS"
  out=$("$CTL" run -s "svstart$r" -l 'write=1GiB/s' -- sh -c "$LOOP_SH") || die "the service loop failed"
  echo "cold ${out% *}" >>"$RUNS"
  echo "warm ${out#* }" >>"$RUNS"
done
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
ms() { awk -v v="$1" '$1 == v { print $2 }' "$RUNS" | median | awk -v n="$2" '{ printf "%.4f", $1 / 1e6 / n }'; }
raw=$(ms raw "$LOOP")
for v in raw cold warm; do
  n=$LOOP
  [ "$v" = warm ] && n=$((LOOP - 1))
  m=$(ms "$v" "$n")
  echo "$v,$ROUNDS,$m,$(calc "$m / $raw" %.3f)" >>"$CSV"
  printf '  %-5s %s ms per start (x%s)\n' "$v" "$m" "$(calc "$m / $raw" %.3f)" >&2
done
# The run's figure: the median over the rounds of each round's warm start against the same
# round's raw one (the lines of $RUNS come in rounds of three: raw, cold, warm), so that a
# slow minute of the machine, which hits a round's two loops alike, cancels out; the worst
# round beside it: how far one round of ~1 s strays on a shared machine. (The ratio of the
# two medians above is printed too: the CSV's warm row.)
awk -v n="$LOOP" '$1 == "raw" { r = $2 / n } $1 == "warm" { printf "%.4f\n", $2 / (n - 1) / r }' "$RUNS" >"$BENCH_TMP/paired.txt"
warm=$(median <"$BENCH_TMP/paired.txt" | awk '{ printf "%.3f", $1 }')
worst=$(sort -g "$BENCH_TMP/paired.txt" | tail -1 | awk '{ printf "%.3f", $1 }')
echo "paired_median,$ROUNDS,,$warm" >>"$CSV"
echo "worst,$ROUNDS,,$worst" >>"$CSV"
printf '  paired: warm x%s (median of the rounds), worst round x%s\n' "$warm" "$worst" >&2
summary_row "sv_start: a service shell's static child (busybox true), warm start / raw (median of the rounds' paired ratios; worst round)" \
  "x$warm; x$worst" "-" "<= 1.5 (the median)" "$(verdict awk -v r="$warm" 'BEGIN { exit !(r <= 1.5) }')"
