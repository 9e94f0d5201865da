#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench-publish`: copies the last `make bench` run (build/bench, or BENCH_FROM) into
# the tracked places, bench/results/ (CSV, PNG, text, series/), and regenerates
# docs/benchmarks.md from them. `make bench` itself never touches tracked files; run this
# when you mean to update the published figures, then commit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BONSAI_BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
from=${BENCH_FROM:-$build/bench}
to=$root/bench/results
[ -s "$from/machine.txt" ] && [ -s "$from/summary.tsv" ] ||
  { echo "bench-publish: no finished run in $from (run 'make bench' first)" >&2; exit 1; }
grep -q '^duration:' "$from/machine.txt" || { echo "bench-publish: the run in $from did not finish" >&2; exit 1; }
mkdir -p "$to"
# The previous publication goes, except the full compression grid when this run has none.
find "$to" -maxdepth 1 -type f ! -name 'compress_grid_full.*' -delete
rm -rf "$to/series"
if [ -s "$from/compress_grid_full.csv" ]; then rm -f "$to"/compress_grid_full.*; fi
n=0
for f in "$from"/*.csv "$from"/*.png "$from"/*.txt "$from"/summary.tsv; do
  [ -f "$f" ] || continue
  cp "$f" "$to/"
  n=$((n + 1))
done
[ -d "$from/series" ] && cp -r "$from/series" "$to/series"
echo "bench-publish: $n files from $from to $to" >&2
# The plots plot.sh draws, redrawn from the copied CSVs with the tracked plots/*.gp.
BONSAI_BUILD=$build BENCH_RESULTS=$to bash "$here/plot.sh"
BONSAI_BUILD=$build BENCH_RESULTS=$to BENCH_DOC_FILE=$root/docs/benchmarks.md bash "$here/make_doc.sh"
echo "bench-publish: now review and commit bench/results/ and docs/benchmarks.md" >&2
