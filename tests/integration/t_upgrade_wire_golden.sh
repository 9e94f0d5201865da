#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The compressed streams 0.2.0's sender wrote (tests/golden/wire/: each level, wire format
# 4) are decoded by this build's receiver byte for byte: a receiver upgraded before its
# senders keeps every compressed connection (docs/upgrades.md, docs/reference/wire-format.md).
# The replaying sender runs without the library: it writes the stream's bytes as they are.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd zstd cmp
PEER=$PRE/compress_peer
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"
W=$(cd "$(dirname "$0")/../golden/wire" && pwd)
bash "$W/input.sh" > "$T/input"
[ "$(sha256sum < "$T/input" | cut -c1-64)" = d27e602d4df6589b62fdcece679614a0f882ae75bb131093cc27bc04971489f6 ] ||
  fail "input.sh no longer prints what the streams carry"
for s in none lz4 zstd1 zstd3 zstd9; do
  zstd -qdc "$W/$s.bin.zst" > "$T/$s.bin" || fail "zstd $s"
  cmp -s "$T/$s.bin" "$T/input" && fail "$s: the golden stream is the plain text (not compressed by 0.2.0)"
  rm -f "$T/port" "$T/out"
  env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1 BONSAI_COMPRESS_STATS="$T/stats" "$PEER" --listen 0 \
    --port-file "$T/port" --recv "$T/out" > "$T/l.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  [ -s "$T/port" ] || fail "$s: receiver did not start"
  "$PEER" --connect "$(cat "$T/port")" --send "$T/$s.bin" --size 4096 > "$T/c.log" 2>&1 || fail "$s: replay: $(cat "$T/c.log")"
  wait $pid || fail "$s: receiver failed: $(cat "$T/l.log")"
  cmp -s "$T/out" "$T/input" || fail "$s: this build decoded other bytes than 0.2.0 sent ($(stat -c %s "$T/out") bytes)"
  note "$s: $(stat -c %s "$T/$s.bin") bytes of 0.2.0's stream -> the 262144 bytes sent"
done
exit 0
