#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the C-program hardening tests (t_*.sh marked "# sanitized: yes") against the
# ASan+UBSan (BONSAI_SANITIZER=asan) or TSan (=tsan) build of libbonsai.so in
# $BONSAI_BUILD, with the sanitizer runtime preloaded first (see lib/lib.sh). Any
# sanitizer report fails the test. Ends with "N passed, N failed, N skipped" like run.sh.
# A test's hard timeout is its line "# timeout: SECS" times SAN_FACTOR (3: instrumented
# code runs slower; the line is measured on the release build), or T_TIMEOUT (default
# 120) times SAN_FACTOR for a test without one.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${BONSAI_BUILD:?set BONSAI_BUILD to the sanitized build dir}"
: "${BONSAI_SANITIZER:?set BONSAI_SANITIZER to asan or tsan}"
export BONSAI_BUILD BONSAI_SANITIZER
case $BONSAI_SANITIZER in asan|tsan) ;; *) echo "BONSAI_SANITIZER must be asan or tsan" >&2; exit 2 ;; esac
log=$(mktemp "${TMPDIR:-/tmp}/bonsai-san.XXXXXX")
# A report makes the program exit 66 (the test fails) and lands in the test's log, which
# is searched for reports too. Not log_path=: the runtime's mkdir for it reaches
# libbonsai's mkdir wrapper before __asan_init and crashes. LeakSanitizer is off: hosts
# exit without freeing.
export ASAN_OPTIONS="exitcode=66:detect_leaks=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=66"
export TSAN_OPTIONS="exitcode=66:halt_on_error=0"
timeout_s=${T_TIMEOUT:-120}
SAN_FACTOR=3
pass=0 failed=0 skipped=0
for t in "$here"/t_*.sh; do
  [ -x "$t" ] && grep -q '^# sanitized: yes' "$t" || continue
  name=$(basename "$t" .sh)
  t_s=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -n 1)
  t_s=$((${t_s:-$timeout_s} * SAN_FACTOR))
  start=$(date +%s%N)
  BONSAI_SHM_PREFIX="san.$name.$$." timeout -k 5 "$t_s" bash "$t" > "$log" 2>&1
  rc=$?
  secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  if [ $rc = 0 ] && grep -qE 'Sanitizer|runtime error:' "$log"; then rc=66; fi
  case $rc in
    0) pass=$((pass + 1)); verdict=pass ;;
    77) skipped=$((skipped + 1)); verdict=skip ;;
    124|137) failed=$((failed + 1)); verdict="FAIL (timeout ${t_s}s)" ;;
    *) failed=$((failed + 1)); verdict="FAIL (exit $rc)" ;;
  esac
  printf '%-28s %-22s %6ss [%s]\n' "$name" "$verdict" "$secs" "$BONSAI_SANITIZER"
  if [ "$verdict" != pass ] && [ "$verdict" != skip ]; then
    sed 's/^/    | /' "$log" | head -n 60
  fi
done
rm -f "$log"
echo "$pass passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
