#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws one PNG per experiment from the results directory ($RES: build/bench) with gnuplot (plots/*.gp).
# Skips, with a message, experiments whose CSV is missing or when gnuplot is absent.
source "$(dirname "$0")/../lib/common.sh"

command -v gnuplot >/dev/null || { note "gnuplot not installed: no plots (make deps installs gnuplot-nox)"; exit 0; }
plot() {  # NAME [extra gnuplot definitions]
  local name=$1; shift
  [ -s "$RES/$name.csv" ] || { note "no $name.csv: $name.png not drawn"; return 0; }
  gnuplot -e "RES='$RES'" "$@" "$BENCH_DIR/report/plots/$name.gp" 2>"$BENCH_TMP/gp.err" ||
    { note "gnuplot failed on $name:"; cat "$BENCH_TMP/gp.err" >&2; }
  echo "plot: $RES/$name.png" >&2
}

plot accuracy
# cost.gp wants one row per call: call, raw, none, other, nobind, trickle (ratios to raw).
wide=$BENCH_TMP/cost_wide.csv
awk -F, 'NR > 1 { r[$1, $2] = $5; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
  END { for (i = 1; i <= n; i++) { k = order[i]; line = k
          split("raw none other nobind trickle", v, " ")
          for (j = 1; j <= 5; j++) line = line "," ((k SUBSEP v[j]) in r ? r[k, v[j]] : "nan")
          print line } }' "$RES/cost.csv" 2>/dev/null >"$wide"
plot cost -e "WIDE='$wide'"
plot cpu
plot peers
plot isolation_curve
plot streaming_sweep
