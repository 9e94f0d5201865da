#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make test`: every suite -- unit, integration, the upgrade from the previous release,
# fuzz, ASan+UBSan and TSan (unit and integration) -- in an order that fits a 2-core
# machine in about 15 minutes. The previous release's library (make prev-lib) is the
# first background build: its suite runs right after the integration tests.
#
# The integration tests mostly wait (their programs are held to rates), so they run
# first, several at a time (run.sh, T_JOBS), while the builds they do not need -- the
# unit tests, the fuzzer, the two sanitizer builds -- compile in the background at the
# lowest CPU priority there is (SCHED_IDLE: a task that runs only when no other wants
# the CPU, so a timed test never waits for the compiler). The suites that keep the CPU
# busy (unit tests, fuzzing, sanitized runs) follow, one at a time, each once its
# build is there. A failed suite does not stop the others; the exit status is 1 if any
# failed, and the closing lines say which and how long each took.
#
# Called by the Makefile with MAKE (the recursive make, sharing its jobserver), B (the
# build root) and OUT (the release build directory) set; the release library,
# bonsaictl and the preload programs are built before it starts.
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 2
MAKE=${MAKE:-make}
B=${B:-build}
OUT=${OUT:-$B}
logdir=$B/test-logs
mkdir -p "$logdir"
t0=$SECONDS
failed=()
times=()

# Lowest CPU priority for a command: SCHED_IDLE, or nice 19 where that is refused.
idle() {
  if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi
}

# Runs one suite in the foreground: SUITE_NAME COMMAND...
suite() {
  local name=$1 start=$SECONDS
  shift
  printf '\n== %s (at %d s) ==\n' "$name" $((SECONDS - t0))
  # Its output is kept, so the closing lines can name a failed test again.
  if ! "$@" 2>&1 | tee "$logdir/suite-${name// /-}.log"; then failed+=("$name"); fi
  times+=("$(printf '%-26s %5d s' "$name" $((SECONDS - start)))")
}

# The background builds, in the order their suites need them. Each step's status goes
# to a file the foreground waits for.
bg_build() {  # NAME MAKE-ARGS...
  local name=$1
  shift
  if idle $MAKE --no-print-directory B="$B" "$@" >"$logdir/build-$name.log" 2>&1; then
    echo 0 >"$logdir/build-$name.status"
  else
    echo 1 >"$logdir/build-$name.status"
  fi
}
rm -f "$logdir"/build-*.status "$logdir"/suite-*.log
set -m  # the background builds in a process group of their own: stopped as one on exit
(
  bg_build prev prev-lib  # the previous release's library, for the upgrade suite (cached)
  # Its package, for t_upgrade_deb (root only: dpkg -i; cached). A failure here is the
  # test's to report: it builds the package itself when none is there.
  [ "$(id -u)" != 0 ] || bg_build prevdeb prev-deb
  bg_build unit unit-tests
  bg_build fuzz fuzz
  bg_build asan MODE=asan sanitizer-build
  bg_build tsan MODE=tsan sanitizer-build
) &
bg=$!
set +m
trap 'kill -- -$bg 2>/dev/null' EXIT

# Waits for a background build; @return its status (its log's tail shown on failure).
built() {  # NAME
  local f=$logdir/build-$1.status
  while [ ! -e "$f" ]; do
    kill -0 "$bg" 2>/dev/null || { sleep 1; [ -e "$f" ] && break; echo "the background builds stopped before '$1'"; return 1; }
    sleep 1
  done
  if [ "$(cat "$f")" != 0 ]; then
    echo "building '$1' failed ($logdir/build-$1.log):"
    tail -n 30 "$logdir/build-$1.log" | sed 's/^/    | /'
    return 1
  fi
}

# Its tests that run alone (CPU-bound rates side by side) stop the background builds
# meanwhile (run.sh, T_PAUSE_PGID); the others run beside them.
export T_PAUSE_PGID=$bg
suite integration $MAKE --no-print-directory B="$B" test-integration
unset T_PAUSE_PGID
if built prev; then
  [ "$(id -u)" != 0 ] || built prevdeb >/dev/null || echo "the previous release's package: see $logdir/build-prevdeb.log"
  suite upgrade $MAKE --no-print-directory B="$B" test-upgrade
else
  failed+=("prev build")
fi
if built unit; then suite unit $MAKE --no-print-directory B="$B" test-unit; else failed+=("unit build"); fi
if built fuzz; then suite fuzz $MAKE --no-print-directory B="$B" test-fuzz; else failed+=("fuzz build"); fi
for m in asan tsan; do
  if built "$m"; then
    suite "$m unit" $MAKE --no-print-directory B="$B" MODE=$m test-unit
    suite "$m integration" $MAKE --no-print-directory B="$B" MODE=$m test-integration-$m
  else
    failed+=("$m build")
  fi
done
wait "$bg" 2>/dev/null
trap - EXIT

printf '\n== make test: %d s ==\n' $((SECONDS - t0))
printf '%s\n' "${times[@]}"
# Tests that passed only when run again alone (run.sh): named, to be looked at.
grep -h '^FLAKY: ' "$logdir"/suite-*.log 2>/dev/null
if ((${#failed[@]})); then
  # run.sh closes with a "FAILED: TEST" block per failed test: repeated here, last.
  for f in "$logdir"/suite-*.log; do
    sed -n '/^FAILED: /,$p' "$f" | head -n 80
  done
  printf 'FAILED: %s\n' "${failed[*]}"
  exit 1
fi
echo "all suites passed"
