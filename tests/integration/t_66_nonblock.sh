#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Non-blocking pipe and socket under caps: no fake EAGAIN while data could move (the
# library shortens transfers instead); the data arrives intact.
# sanitized: yes
. "$(dirname "$0")/lib.sh"
need_prog nonblock_io
out=$(limited 'read=4MiB/s,write=4MiB/s,recv=2MiB/s' "$T/s.json" "$PRE/nonblock_io") || fail "nonblock_io failed"
note "$out"
[ "$(stats_sum "$T/s.json" throttled read write recv)" -gt 0 ] || fail "nothing was throttled"
check_between "1 MiB each way at 4 MiB/s plus a socket drain (s)" "$(field "$out" secs)" 0.35 5
