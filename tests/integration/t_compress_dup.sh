#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A compressed connection reached through duplicated descriptors (issue 12): written
# through the socket and a dup/dup2/dup3/F_DUPFD_CLOEXEC copy in turn (the original
# closed first, the rest through the copy), and read through a copy that epoll
# watches while the library holds decoded bytes (tests/preload/comp_dup.c). Exact
# bytes each time; the receiver's totals show frames decoded.
# sanitized: yes
. "$(dirname "$0")/lib.sh"
need_prog comp_dup
env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" BONSAI_COMPRESS_ACCEPT=1 BONSAI_COMPRESS_POLICY=fixed:zstd:1 \
  BONSAI_COMPRESS_STATS="$T/cstats.%p" timeout 120 "$PRE/comp_dup" > "$T/out" 2> "$T/err" || {
  cat "$T/out" "$T/err" >&2
  fail "comp_dup failed"
}
cat "$T/out" >&2
[ "$(grep -c '^ok ' "$T/out")" = 6 ] || fail "expected 6 cases"
app=$(cat "$T"/cstats.* | grep -o '"rx_app_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
wire=$(cat "$T"/cstats.* | grep -o '"rx_wire_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
[ "$app" -ge $((6 * MiB)) ] || fail "the receiver decoded $app bytes"
[ "$wire" -gt 0 ] && [ $((wire * 4)) -lt "$app" ] || fail "$wire wire bytes for $app: not compressed"
note "decoded $app bytes from $wire on the wire"
