#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# 1 to 128 threads of one process under one write cap: tx_threads writes 4 KiB calls into a
# pipe from N threads, rx_meter measures what arrives (least-squares rate after 0.25-0.5 s,
# CV over 100 ms). Does the per-process bucket hold as threads multiply (each thread prepays
# its own ~1 ms batch)? Writes $RES/threads.csv and one summary row (worst |error|).
# Env: THREADS_N (quick "1 8 128", full "1 2 4 8 16 32 64 128"), THREADS_CAP (64MiB),
# THREADS_SECS (quick 2, full 4).
source "$(dirname "$0")/../lib/common.sh"
build_helpers
# Full 4 s a point (6 before): the meter's steady rate leaves the first burst out, as in
# accuracy.sh's 4 s points.
if [ "$BENCH" = full ]; then NS="1 2 4 8 16 32 64 128" SECS=4; else NS="1 8 128" SECS=2; fi
NS=${THREADS_N:-$NS}; SECS=${THREADS_SECS:-$SECS}; CAP=${THREADS_CAP:-64MiB}
CAP_B=$(bytes_of "$CAP")
CSV=$RES/threads.csv
echo "threads,cap,cap_bps,call_bytes,rate_bps,err_pct,cv100,total_bps,total_err_pct" >"$CSV"
note "threads ($BENCH): $NS threads, write=$CAP, 4 KiB calls, ${SECS} s each"
worst=0
for n in $NS; do
  line=$(env LD_PRELOAD="$LIB" BONSAI_LIMITS="write=$CAP/s" "$HELP/tx_threads" -n "$n" -b 4096 2>"$BENCH_TMP/err" |
    "$HELP/rx_meter" -t "$SECS")
  lib_errors "$BENCH_TMP/err"
  rate=$(kv "$line" rate) total=$(kv "$line" total_rate)
  err=$(err_pct "${rate:-nan}" "$CAP_B") terr=$(err_pct "${total:-nan}" "$CAP_B")
  echo "$n,$CAP,$CAP_B,4096,${rate:-nan},$err,$(kv "$line" cv100),${total:-nan},$terr" >>"$CSV"
  printf '  %3s threads: rate %12s B/s  err %8s%%  (whole window incl. first burst %s%%)  cv100 %s\n' "$n" "$rate" "$err" "$terr" "$(kv "$line" cv100)" >&2
  worst=$(awk -v w="$worst" -v e="$err" 'BEGIN { if (e == "nan" || w == "nan") { print "nan"; exit } if (e < 0) e = -e; print (e > w) ? e : w }')
done
summary_row "rate error, 1-128 threads of one process ($(wc -w <<<"$NS") points, $CAP/s)" "${worst}% (worst)" "-" "<= 0.5%" "$(verdict abs_le "$worst" 0.5)"
echo "threads: $CSV" >&2
