# SPDX-License-Identifier: MIT
# Driver for the t_shape_* tests: one huge call of a family under a cap on that
# call alone must take its time, move its data intact and be counted once. Runs
# tests/preload/shape_calls; sourced after lib.sh, never run.

# shape_start MODE LIMITS SIZE: starts `shape_calls MODE SIZE` in the background.
shape_start() {
  local mode=$1 limits=$2 size=$3
  mkdir -p "$T/$mode.d"
  limited "$limits" "$T/$mode.json" "$PRE/shape_calls" "$mode" "$size" "$T/$mode.d" \
    > "$T/$mode.out" 2> "$T/$mode.err" &
}

# shape_wait: waits for every started program; fails if one failed.
shape_wait() {
  local pid rc=0
  for pid in $(jobs -p); do wait "$pid" || rc=1; done
  [ $rc -eq 0 ] || { tail -n 5 "$T"/*.err >&2; fail "a shape_calls run exited non-zero"; }
}

# shape_check MODE CALL BYTES MIN_SECS [MAX_SECS]: MODE's single call took MIN..MAX
# seconds (default max 30: a loaded machine only slows a capped call down), CALL's
# counters hold exactly BYTES (charged once, peeks not at all), stderr is empty.
shape_check() {
  local mode=$1 call=$2 bytes=$3 lo=$4 hi=${5:-30} out got
  out=$(cat "$T/$mode.out")
  [ -s "$T/$mode.err" ] && fail "$mode: stderr: $(head -c 500 "$T/$mode.err")"
  [ -n "$out" ] || fail "$mode: no result line"
  got=$(stats_sum "$T/$mode.json" bytes "$call")
  [ "$got" = "$bytes" ] || fail "$mode: '$call' counted $got bytes, expected $bytes"
  check_between "$mode: one call of $(field "$out" bytes) B (s)" "$(field "$out" secs)" "$lo" "$hi"
}
