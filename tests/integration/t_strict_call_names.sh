#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One meaning of a call name in every mode (issue 49; docs/reference/limits.md "What each call name
# covers"): a rule named after a system call holds that system call however the program
# reaches it. glibc's open() is openat(2): `openat=30/s` holds 30 open() calls to ~1 s
# preloaded, supervised (a static program) and under --strict alike (before: 0.01 s
# preloaded, held under --strict); `open=30/s` holds none of them in any mode (open(2) is
# never made); the group `opens` holds them everywhere; syscall(SYS_openat) is an openat.
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog open_loop open_loop_static
N=30
RATE=30
: > "$T/f"

# run MODE RULE HOW: "bytes=N secs=S" of N opens of $T/f made by HOW under RULE in MODE
run() {
  local mode=$1 rule=$2 how=$3 svc=s$RANDOM
  case $mode in
    preload) limited "$rule" "$T/$svc.json" "$PRE/open_loop" "$T/f" $N "$how" ;;
    supervise) "$CTL" run --supervise -s "$svc" -l "$rule" -- "$PRE/open_loop_static" "$T/f" $N "$how" ;;
    strict) "$CTL" run --strict -s "$svc" -l "$rule" -- "$PRE/open_loop" "$T/f" $N "$how" ;;
  esac 2> "$T/err" || fail "$mode $rule $how failed: $(cat "$T/err")"
}

for mode in preload supervise strict; do
  out=$(run $mode "openat=$RATE/s" open)
  check_rate "open() under openat=$RATE/s, $mode" $N "$(field "$out" secs)" $RATE
  out=$(run $mode "open=$RATE/s" open)
  check_between "open() under open=$RATE/s, $mode: not held (s)" "$(field "$out" secs)" 0 0.3
done
for mode in preload strict; do
  out=$(run $mode "opens=$RATE/s" open)
  check_rate "open() under opens=$RATE/s, $mode" $N "$(field "$out" secs)" $RATE
done
out=$(run preload "openat=$RATE/s" syscall)
check_rate "syscall(SYS_openat) under openat=$RATE/s, preload" $N "$(field "$out" secs)" $RATE
exit 0
