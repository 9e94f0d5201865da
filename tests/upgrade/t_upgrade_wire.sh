#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A fleet upgraded host by host keeps its compressed connections: a real 0.2.0 sender
# (the previous release's library, make prev-lib) to this build's receiver, and this
# build's sender to a 0.2.0 receiver, over 127.0.0.1, for each level and the default
# policy: the bytes arrive exact, and compressed (a sender of this release writes what the
# previous one decodes: docs/reference/wire-format.md, docs/upgrades.md).
# timeout: 60
. "$(dirname "$0")/../integration/lib/lib.sh"
need_cmd cmp
PEER=$PRE/compress_peer
[ -x "$PEER" ] || fail "no $PEER: make it (make preload)"
PREV=${BONSAI_PREV_LIB:-$BONSAI_BUILD/prev/libbonsai.so}
[ -f "$PREV" ] || skip "no previous release's library at $PREV (make prev-lib says why)"
bash "$(dirname "$0")/../golden/wire/input.sh" > "$T/text"
{ for _ in 1 2 3 4 5 6 7 8; do cat "$T/text"; done; head -c $((1 * MiB)) /dev/urandom; cat "$T/text"; } > "$T/input"
size=$(stat -c %s "$T/input")
stats_field() { grep -o "\"$2\":[0-9]*" "$1" | awk -F: '{ s += $2 } END { print s + 0 }'; }

# xfer NAME SENDER_LIB RECEIVER_LIB POLICY
xfer() {
  local name=$1 slib=$2 rlib=$3 pol=$4 pid
  rm -f "$T/port" "$T/out" "$T"/stats.*
  env LD_PRELOAD="$rlib" BONSAI_COMPRESS_ACCEPT=1 "$PEER" --listen 0 --port-file "$T/port" --recv "$T/out" \
    > "$T/l.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  [ -s "$T/port" ] || fail "$name: receiver did not start"
  env LD_PRELOAD="$slib" BONSAI_COMPRESS_TO='127.0.0.1:*' BONSAI_COMPRESS_POLICY="$pol" BONSAI_COMPRESS_STATS="$T/stats.s" \
    "$PEER" --connect "$(cat "$T/port")" --send "$T/input" --size 65536 > "$T/c.log" 2>&1 ||
    fail "$name $pol: sender failed: $(cat "$T/c.log")"
  wait $pid || fail "$name $pol: receiver failed: $(cat "$T/l.log")"
  cmp -s "$T/out" "$T/input" || fail "$name $pol: the bytes differ ($(stat -c %s "$T/out") of $size)"
  [ -s "$T/l.log" ] && grep -qi 'bonsai' "$T/l.log" && fail "$name $pol: the receiver complained: $(cat "$T/l.log")"
  local app wire
  app=$(stats_field "$T/stats.s" tx_app_bytes) wire=$(stats_field "$T/stats.s" tx_wire_bytes)
  case $pol in
    fixed:none | datarate) ;;  # datarate sends 127.0.0.1's fast link uncompressed
    *) [ "$wire" -gt 0 ] && [ $((wire * 4)) -lt $((app * 3)) ] || fail "$name $pol: not compressed (app $app, wire $wire)" ;;
  esac
  note "$name $pol: $size bytes exact (sender: app $app, wire $wire)"
}
for pol in fixed:none fixed:lz4 fixed:zstd:3 datarate; do
  xfer "0.2.0 -> this build" "$PREV" "$LIB" "$pol"
  xfer "this build -> 0.2.0" "$LIB" "$PREV" "$pol"
done
exit 0
