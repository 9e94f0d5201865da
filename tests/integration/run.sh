#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every executable tests/integration/t_*.sh in name order, each with a hard
# timeout and its own BONSAI_SHM_PREFIX; prints one line per test (its verdict and
# seconds) and the closing line "N passed, N failed, N skipped". A test's hard timeout
# is its line "# timeout: SECS" (about 3x its time on a loaded 2-core machine, never
# under 30 s); T_TIMEOUT (seconds, default 120) applies only to a test without one.
# Env: BONSAI_BUILD (required), T_FILTER (a grep pattern on test names), T_TIMEOUT,
# V=1 (show output). Sourced libraries and helper programs live in lib/.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${BONSAI_BUILD:?set BONSAI_BUILD to the build dir}"
export BONSAI_BUILD
timeout_s=${T_TIMEOUT:-120}
pass=0 failed=0 skipped=0
logdir=$(mktemp -d "${TMPDIR:-/tmp}/bonsai-integ-logs.XXXXXX")
for t in "$here"/t_*.sh; do
  [ -x "$t" ] || continue
  name=$(basename "$t" .sh)
  if [ -n "${T_FILTER:-}" ] && ! printf '%s\n' "$name" | grep -q -- "$T_FILTER"; then continue; fi
  t_s=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -n 1)
  t_s=${t_s:-$timeout_s}
  start=$(date +%s%N)
  BONSAI_SHM_PREFIX="it.$name.$$." timeout -k 5 "$t_s" bash "$t" > "$logdir/$name.log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  case $rc in
    0) pass=$((pass + 1)); verdict=pass ;;
    77) skipped=$((skipped + 1)); verdict=skip ;;
    124|137) failed=$((failed + 1)); verdict="FAIL (timeout ${t_s}s)" ;;
    *) failed=$((failed + 1)); verdict="FAIL (exit $rc)" ;;
  esac
  printf '%-28s %-22s %6ss\n' "$name" "$verdict" "$secs"
  case $verdict in
    FAIL*) sed 's/^/    | /' "$logdir/$name.log" | tail -n 40 ;;
    skip) grep -h '^SKIP' "$logdir/$name.log" | sed 's/^/    | /' ;;
    *) [ "${V:-0}" = 1 ] && sed 's/^/    | /' "$logdir/$name.log" ;;
  esac
done
rm -rf "$logdir"
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
