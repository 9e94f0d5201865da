#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every executable tests/integration/t_*.sh, each with a hard timeout and its own
# BONSAI_SHM_PREFIX; prints one line per test as it ends (its verdict and seconds) and
# the closing line "N passed, N failed, N skipped".
#
# Several tests run at once (T_JOBS, default 3 on this project's 2-core machines): most
# of a test's time is its programs held to a rate, which needs no CPU, and every test
# has its own segments, ports and files. A test that must not share the machine -- one
# that measures CPU or a rate at a tolerance other tests' load would eat, or that
# keeps the cores busy itself -- says so with a line "# parallel: no (WHY)" and runs
# alone, before the others. Within each group the longest first (by its timeout line),
# so the last lane does not end long after the others.
#
# A test's hard timeout is its line "# timeout: SECS" (about 3x its time on a loaded
# 2-core machine, never under 30 s); T_TIMEOUT (seconds, default 120) applies only to a
# test without one. Env: BONSAI_BUILD (required), T_FILTER (a grep pattern on test
# names), T_TIMEOUT, T_JOBS (1: one at a time, in name order), V=1 (show output),
# T_RERUN=0 (a failed test is not run again alone; see the end of this file),
# T_PAUSE_PGID (a process group stopped while tests run alone: make test's background builds).
# Sourced libraries and helper programs live in lib/.
#
# BONSAI_SANITIZER=asan|tsan (run_sanitized.sh): only the C-program hardening tests (a
# line "# sanitized: yes"), against the ASan+UBSan or TSan build of libbonsai.so in
# BONSAI_BUILD with the sanitizer runtime preloaded first (see lib/lib.sh); a sanitizer
# report fails the test; timeouts times SAN_FACTOR (3: instrumented code runs slower,
# the lines are measured on the release build).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${BONSAI_BUILD:?set BONSAI_BUILD to the build dir}"
export BONSAI_BUILD
timeout_s=${T_TIMEOUT:-120}
jobs=${T_JOBS:-3}
case $jobs in '' | *[!0-9]* | 0) echo "T_JOBS must be a positive number (got '$jobs')" >&2; exit 2 ;; esac
san=${BONSAI_SANITIZER:-}
case $san in
  '') san_factor=1 prefix=it ;;
  asan|tsan)
    san_factor=3 prefix=san
    export BONSAI_SANITIZER
    # A report makes the program exit 66 (the test fails) and lands in the test's log,
    # which is searched for reports too. Not log_path=: the runtime's mkdir for it
    # reaches libbonsai's mkdir wrapper before __asan_init and crashes. LeakSanitizer
    # is off: hosts exit without freeing.
    export ASAN_OPTIONS="exitcode=66:detect_leaks=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=66"
    export TSAN_OPTIONS="exitcode=66:halt_on_error=0" ;;
  *) echo "BONSAI_SANITIZER must be asan or tsan (got '$san')" >&2; exit 2 ;;
esac
pass=0 failed=0 skipped=0 failed_names=()
logdir=$(mktemp -d "${TMPDIR:-/tmp}/bonsai-integ-logs.XXXXXX")
# T_PAUSE_PGID: a process group to stop while a test runs alone (make test's background
# builds, tests/suite.sh). At the lowest CPU priority they still slow a CPU-bound test on
# this kind of VM (t_compress_repeat's probe judged zstd:3 by its rate under two idle
# compilers and kept lz4: failed twice in a row in CI). Continued on any exit.
pause_bg() { [ -z "${T_PAUSE_PGID:-}" ] || kill -STOP -- "-$T_PAUSE_PGID" 2>/dev/null || true; }
resume_bg() { [ -z "${T_PAUSE_PGID:-}" ] || kill -CONT -- "-$T_PAUSE_PGID" 2>/dev/null || true; }
trap 'resume_bg; rm -rf "$logdir"' EXIT

# The tests to run: "TIMEOUT NAME" lines, alone ones and shared ones apart.
alone=() shared=()
for t in "$here"/t_*.sh; do
  [ -x "$t" ] || continue
  name=$(basename "$t" .sh)
  if [ -n "${T_FILTER:-}" ] && ! printf '%s\n' "$name" | grep -q -- "$T_FILTER"; then continue; fi
  if [ -n "$san" ] && ! grep -q '^# sanitized: yes' "$t"; then continue; fi
  t_s=$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$t" | head -n 1)
  t_s=$((${t_s:-$timeout_s} * san_factor))
  if [ "$jobs" -gt 1 ] && grep -q '^# parallel: no' "$t"; then alone+=("$t_s $name"); else shared+=("$t_s $name"); fi
done
by_length() { [ "$jobs" -gt 1 ] && sort -k1,1nr -k2,2 || cat; }

# Starts one test in the background; its exit status lands in $logdir/NAME.rc.
declare -A pid_name=() pid_start=() pid_timeout=()
start_test() {  # TIMEOUT NAME
  local t_s=$1 name=$2
  (
    BONSAI_SHM_PREFIX="$prefix.$name.$$." timeout -k 5 "$t_s" bash "$here/$name.sh" >"$logdir/$name.log" 2>&1
    echo $? >"$logdir/$name.rc"
  ) &
  pid_name[$!]=$name
  pid_start[$!]=$(date +%s%N)
  pid_timeout[$!]=$t_s
}

# Waits for any running test to end and reports it.
reap_one() {
  local pid="" p
  wait -n -p pid
  if [ -z "$pid" ] || [ -z "${pid_name[$pid]+x}" ]; then
    # Not one of ours (the list's own reader), or nothing to wait for: look.
    for p in "${!pid_name[@]}"; do kill -0 "$p" 2>/dev/null || { report "$p"; return 0; }; done
    return 0
  fi
  report "$pid"
}

report() {  # PID
  local pid=$1
  local name=${pid_name[$pid]} t_s=${pid_timeout[$pid]} start=${pid_start[$pid]}
  unset "pid_name[$pid]" "pid_start[$pid]" "pid_timeout[$pid]"
  local rc secs verdict
  rc=$(cat "$logdir/$name.rc" 2>/dev/null || echo 1)
  if [ -n "$san" ] && [ "$rc" = 0 ] && grep -qE 'Sanitizer|runtime error:' "$logdir/$name.log"; then rc=66; fi
  secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  case $rc in
    0) pass=$((pass + 1)); verdict=pass ;;
    77) skipped=$((skipped + 1)); verdict=skip ;;
    124|137) failed=$((failed + 1)); verdict="FAIL (timeout ${t_s}s)" ;;
    *) failed=$((failed + 1)); verdict="FAIL (exit $rc)" ;;
  esac
  printf '%-28s %-22s %6ss%s\n' "$name" "$verdict" "$secs" "${san:+ [$san]}"
  case $verdict in FAIL*) failed_names+=("$name") ;; esac
  case $verdict in
    FAIL*) if [ -n "$san" ]; then sed 's/^/    | /' "$logdir/$name.log" | head -n 60
           else sed 's/^/    | /' "$logdir/$name.log" | tail -n 40; fi ;;
    skip) grep -h '^SKIP' "$logdir/$name.log" | sed 's/^/    | /' ;;
    *) [ "${V:-0}" = 1 ] && sed 's/^/    | /' "$logdir/$name.log" ;;
  esac
  return 0
}

# Runs a list of "TIMEOUT NAME" lines, at most `lanes` at a time.
run_list() {  # LANES LINE...
  local lanes=$1 line order
  shift
  mapfile -t order < <(printf '%s\n' "$@" | by_length)
  for line in "${order[@]}"; do
    [ -n "$line" ] || continue
    while [ "${#pid_name[@]}" -ge "$lanes" ]; do reap_one; done
    start_test ${line}
  done
  while [ "${#pid_name[@]}" -gt 0 ]; do reap_one; done
}


if ((${#alone[@]})); then
  pause_bg
  run_list 1 "${alone[@]}"
  resume_bg
fi
((${#shared[@]})) && run_list "$jobs" "${shared[@]}"

# A failed test runs once more, alone (at most six of them), on a machine the other tests no longer load
# (T_RERUN=0: not). Most integration tests time programs held to a rate, and a burst
# of load elsewhere on a shared CI machine can slow one below its tolerance; a defect
# fails again. A test that passes only on its second run counts as passed and is named
# on a FLAKY line at the end: it is still to be looked at, never silently forgiven.
flaky_names=()
if [ "${T_RERUN:-1}" = 1 ] && ((${#failed_names[@]})) && ((${#failed_names[@]} <= 6)); then
  first_failed=("${failed_names[@]}")
  failed_names=()
  pause_bg
  for n in "${first_failed[@]}"; do
    cp "$logdir/$n.log" "$logdir/$n.first.log"
    echo "rerun, alone: $n"
    failed=$((failed - 1))
    f0=$failed
    run_list 1 "$(sed -n 's/^# timeout: \([0-9][0-9]*\)$/\1/p' "$here/$n.sh" | head -n 1 |
      awk -v d="$timeout_s" -v f="$san_factor" '{ d = $1 } END { print d * f }') $n"
    [ "$failed" -eq "$f0" ] && flaky_names+=("$n")
  done
  resume_bg
fi
echo "$pass passed, $failed failed, $skipped skipped"
for n in "${flaky_names[@]}"; do
  echo "FLAKY: $n failed, then passed alone; its first run:"
  tail -n 15 "$logdir/$n.first.log" | sed 's/^/    | /'
done
# The failures again at the very end, so a log cut to its tail still names them.
for n in "${failed_names[@]}"; do
  echo "FAILED: $n"
  tail -n 15 "$logdir/$n.log" | sed 's/^/    | /'
done
[ "$failed" -eq 0 ]
