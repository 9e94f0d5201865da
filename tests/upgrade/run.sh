#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test-upgrade`: the tests that need the previous release built (tests/golden/
# build_prev.sh, `make prev-lib`), apart from the integration suite so that they never
# wait for that build in one of its lanes: `make test` runs them once the background
# build is there. Each tests/upgrade/t_*.sh with its "# timeout: SECS" and its own
# BONSAI_SHM_PREFIX, one at a time; a line per test, then "N passed, N failed, N skipped".
# Env: BONSAI_BUILD (required), V=1 (show output).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${BONSAI_BUILD:?set BONSAI_BUILD to the build dir}"
export BONSAI_BUILD
pass=0 failed=0 skipped=0
log=$(mktemp "${TMPDIR:-/tmp}/bonsai-upgrade.XXXXXX")
trap 'rm -f "$log"' EXIT
for t in "$here"/t_*.sh; do
  name=$(basename "$t" .sh)
  secs=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -n 1)
  start=$SECONDS
  BONSAI_SHM_PREFIX="up.$name.$$." timeout -k 5 "${secs:-120}" bash "$t" >"$log" 2>&1
  rc=$?
  case $rc in
    0) verdict=pass pass=$((pass + 1)) ;;
    77) verdict=skip skipped=$((skipped + 1)) ;;
    *) verdict="FAIL (exit $rc)" failed=$((failed + 1)) ;;
  esac
  printf '%-28s %-22s %5ds\n' "$name" "$verdict" $((SECONDS - start))
  if [ "$rc" != 0 ] || [ "${V:-0}" = 1 ]; then sed 's/^/    | /' "$log"; fi
done
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
