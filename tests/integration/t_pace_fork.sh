#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An epoll set shared across fork (issue 35): the parent registers non-blocking sockets
# edge-triggered, the child runs the loop under a send cap. The child's copy of the
# library's registrations drives the holds and edges: no lost edge (a 2 s wait), the cap
# held.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd python3
out=$(limited 'send=2MiB/s' "$T/s.json" timeout 30 python3 "$TLIB/pace_epoll_fork.py") ||
  fail "the forked loop failed: $out"
note "$out"
check_rate "child's sends" "$(field "$out" bytes)" "$(field "$out" secs)" $((2 * 1048576))
check_between "readiness waits (a spin makes thousands)" "$(field "$out" waits)" 1 2000
