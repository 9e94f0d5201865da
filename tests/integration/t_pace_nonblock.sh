#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Non-blocking pipe and socket under caps (issue 35): a capped call never sleeps (the
# longest single call stays far below a wait), it moves what the bucket allows or fails
# with EAGAIN (SPLICE_F_NONBLOCK too, through syscall()), poll() wakes the caller when the tokens are due (no busy loop: about one
# poll per refusal), the data arrives intact and the caps hold.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog nonblock_io
out=$(limited 'read=4MiB/s,write=4MiB/s,recv=2MiB/s' "$T/s.json" "$PRE/nonblock_io") || fail "nonblock_io failed"
note "$out"
[ "$(stats_sum "$T/s.json" refused read write recv)" -gt 0 ] || fail "no call was refused for the cap"
[ "$(stats_sum "$T/s.json" held_ns read write recv)" -gt 0 ] || fail "no time held was counted"
check_between "longest single call (ms): none sleeps" "$(field "$out" longest_ms)" 0 40
check_between "polls per refusal" "$(awk -v p="$(field "$out" polls)" -v e="$(field "$out" eagain)" 'BEGIN { print (e ? p / e : 0) }')" 0.5 1.5
check_between "refusals (a busy loop would make tens of thousands)" "$(field "$out" eagain)" 1 6000
# syscall(SYS_splice, ..., SPLICE_F_NONBLOCK) between blocking pipes: the flag alone says
# it must not wait (refused, not held), and poll() on its capped side (the source, under
# read=) says when to try again.
check_between "raw splice refusals (SPLICE_F_NONBLOCK; 0: it waited; a busy loop: thousands)" \
  "$(field "$out" splice_eagain)" 1 2000
# 1 MiB each way at 4 MiB/s (0.5 s) plus a socket drain at 2 MiB/s, in 16 blocks of
# writes then reads: each bucket idles while the other works, so each of the 32 phases
# may start with a depth (10 ms of rate) at once: at least ~0.2 s.
check_between "seconds" "$(field "$out" secs)" 0.15 6
