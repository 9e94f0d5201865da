#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every data call on a compressed socket goes through the frames (issue 12):
# sendmmsg/recvmmsg, syscall() by number (write, writev, sendto, sendmsg and their
# reads, splice), pwritev2/preadv2 at offset -1, and splice out of the socket into a
# pipe, each after a write() has made the stream framed (tests/preload/comp_calls.c).
# Exact bytes each time; the receiver's totals show frames decoded.
# sanitized: yes
. "$(dirname "$0")/lib.sh"
need_prog comp_calls
env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" BONSAI_COMPRESS_ACCEPT=1 BONSAI_COMPRESS_POLICY=fixed:zstd:1 \
  BONSAI_COMPRESS_STATS="$T/cstats.%p" "$PRE/comp_calls" > "$T/out" 2> "$T/err" || {
  cat "$T/out" "$T/err" >&2
  fail "comp_calls failed"
}
cat "$T/out" >&2
[ "$(grep -c '^ok ' "$T/out")" = 8 ] || fail "expected 8 cases"
app=$(cat "$T"/cstats.* | grep -o '"rx_app_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
wire=$(cat "$T"/cstats.* | grep -o '"rx_wire_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
[ "$app" -ge $((8 * MiB)) ] || fail "the receiver decoded $app bytes"
[ "$wire" -gt 0 ] && [ $((wire * 4)) -lt "$app" ] || fail "$wire wire bytes for $app: not compressed"
note "decoded $app bytes from $wire on the wire"
