#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Event loops under a write cap (issue 35): one thread writes to 8 non-blocking
# sockets (and pipes) until EAGAIN or a short write, then waits in epoll (level- and
# edge-triggered, one-shot), poll or select. Every mode must finish at the cap (the
# loop is woken when the tokens are due: an edge-triggered loop gets its edge; 4 threads
# sharing one epoll set of one-shot registrations get theirs re-armed), share it
# evenly among the descriptors, let a light descriptor's small write through at once,
# and not spin.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog nb_loop
for mode in et lt oneshot poll select "et pipe" threads; do
  set -- $mode
  out=$(limited 'write=4MiB/s' "$T/s.json" timeout 60 "$PRE/nb_loop" "$1" 8 512K ${2:-unix}) || fail "$mode: nb_loop failed"
  note "$mode: $out"
  # 4 MiB at 4 MiB/s: ~1 s (a depth of burst at the start).
  check_rate "$mode: write" "$(field "$out" bytes)" "$(field "$out" secs)" 4194304
  check_between "$mode: least/most bytes when the first descriptor finished" "$(field "$out" fair)" 0.75 1
  check_between "$mode: a light descriptor's 512-byte write (ms)" "$(field "$out" light_ms)" 0 50
  check_between "$mode: readiness calls (a spin makes 10^5)" "$(field "$out" waits)" 1 8000
done
