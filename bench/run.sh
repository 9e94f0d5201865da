#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: accuracy, cost, CPU while throttled and peers side by side, plus the
# co-tenant, control-plane, compression and fio engine benchmarks where present; CSV and PNG in
# bench/results/, a summary table on stdout, docs/benchmarks.md regenerated.
# BENCH=quick (default, ~5 min) | full (30+ min). BONSAI_BUILD=build dir. BENCH_DOC=0: keep docs.
source "$(dirname "$0")/lib/common.sh"
[ "$BENCH" = quick ] || [ "$BENCH" = full ] || die "BENCH must be quick or full (got '$BENCH')"
build_helpers
rm -f "$SUMMARY" "$RES"/other_*.txt
machine_info | tee "$RES/machine.txt"
if [ "$BENCH" = full ]; then cmd="make bench BENCH=full"; else cmd="make bench"; fi
echo "command: ${BENCH_COMMAND:-$cmd}" | tee -a "$RES/machine.txt"
start=$(date +%s)

step() {  # SCRIPT...
  local t0=$SECONDS
  echo "== $* ==" >&2
  bash "$BENCH_DIR/$1" "${@:2}" || summary_row "$1" "script failed (exit $?)" "-" "-" "FAIL"
  echo "   ($((SECONDS - t0)) s)" >&2
}
step accuracy.sh
step cost.sh
step cpu.sh
step peers.sh

# Benchmarks owned by other parts of the project: run when present, output kept.
if [ "$BENCH" = full ]; then LIMIT=2400; else LIMIT=600; fi
other() {  # NAME SCRIPT ARGS...
  local name=$1 script=$BENCH_DIR/$2
  shift 2
  if [ ! -x "$script" ]; then
    note "$(basename "$script") $* not present (or not executable): skipped"
    return 0
  fi
  echo "== $(basename "$script") $* ==" >&2
  BONSAI_BUILD=$BUILD BENCH=$BENCH timeout "$LIMIT" bash "$script" "$@" 2>&1 | tee "$RES/other_$name.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || summary_row "$(basename "$script") $*" "exit status $rc" "-" "-" "FAIL"
}
other cotenant_buffered cotenant.sh buffered
other cotenant_socket cotenant.sh socket
other ctl_targets ctl_targets.sh
other supervised supervised.sh
other compress compress_bench.sh
other fio_engines fio_engines.sh

bash "$BENCH_DIR/plot.sh"
echo "duration: $(( $(date +%s) - start )) s" >>"$RES/machine.txt"

echo
echo "bonsai benchmark summary ($BENCH; $(tail -1 "$RES/machine.txt"))"
{ printf 'measurement\tbonsai\tpeer(s)\ttarget\tpass/fail\n'; cat "$SUMMARY"; } | column -t -s $'\t'
[ "${BENCH_DOC:-1}" = 0 ] || bash "$BENCH_DIR/make_doc.sh"
echo "results: $RES (CSV, PNG)"
