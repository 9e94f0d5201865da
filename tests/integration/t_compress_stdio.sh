#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stdio on compressed sockets (issue 12): a FILE from fdopen() on a socket writes frames
# (also after a write() started the stream) and reads decoded bytes, with fwrite,
# fprintf, putc, fputs / read, fread, fgets, getc, getline (tests/preload/comp_stdio.c,
# one process forking a sender per case). The receiver's totals show frames decoded.
# sanitized: yes
. "$(dirname "$0")/lib.sh"
need_prog comp_stdio
env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" BONSAI_COMPRESS_ACCEPT=1 BONSAI_COMPRESS_POLICY=fixed:zstd:1 \
  BONSAI_COMPRESS_STATS="$T/cstats.%p" "$PRE/comp_stdio" > "$T/out" 2> "$T/err" || {
  cat "$T/out" "$T/err" >&2
  fail "comp_stdio failed"
}
cat "$T/out" >&2
[ "$(grep -c '^ok ' "$T/out")" = 6 ] || fail "expected 6 cases"
app=$(cat "$T"/cstats.* | grep -o '"rx_app_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
wire=$(cat "$T"/cstats.* | grep -o '"rx_wire_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
[ "$app" -ge $((6 * MiB)) ] || fail "the receiver decoded $app bytes"
[ "$wire" -gt 0 ] && [ $((wire * 4)) -lt "$app" ] || fail "$wire wire bytes for $app: not compressed"
note "decoded $app bytes from $wire on the wire"
