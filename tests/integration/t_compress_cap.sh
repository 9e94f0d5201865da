#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression under a byte cap (issue 5): the cap counts wire bytes, so compressible
# text gets through at a multiple of the cap in application bytes, while random
# bytes lose nothing against no compression; the call accounting (BONSAI_STATS)
# shows fewer wire bytes than application bytes. Wide tolerances: a loaded 2-core CI.
# timeout: 30
# parallel: no (the datarate policy mixes levels only with spare CPU)
. "$(dirname "$0")/lib/lib.sh"
need_cmd zcat
PEER=$PRE/compress_peer  # built by the Makefile from tests/preload/compress_peer.c
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"
changelog_text "$T/text" 16
[ "$(stat -c %s "$T/text")" -ge $((8 * MiB)) ] || skip "not enough changelog text on this machine"
head -c $((8 * MiB)) /dev/urandom > "$T/rand"

# rate FILE SENDER_ENV...: application MiB/s (x100, integer) of one capped transfer.
rate() {
  local file=$1
  shift
  rm -f "$T/port" "$T/out" "$T/calls"
  env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1 "$PEER" --listen 0 --port-file "$T/port" --recv "$T/out" > /dev/null &
  local pid=$! i
  for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_TO=127.0.0.1:* BONSAI_LIMITS=writes=10MiB/s \
    BONSAI_COMPRESS_STATS="$T/stats" BONSAI_STATS="$T/calls" "$@" "$PEER" --connect "$(cat "$T/port")" --send "$file" --size 131072 > "$T/res" ||
    fail "sender failed"
  wait $pid || fail "receiver failed"
  cmp -s "$file" "$T/out" || fail "bytes differ"
  sed 's/.*mibps=\([0-9.]*\).*/\1/' "$T/res" | awk '{ printf "%d", $1 * 100 }'
}

r=$(rate "$T/text" BONSAI_COMPRESS_POLICY=fixed:zstd:3)
note "text, zstd:3, 10 MiB/s cap: $((r / 100)).$((r % 100)) MiB/s of application data"
[ "$r" -ge 1800 ] || fail "zstd:3 text through a 10 MiB/s cap: want >= 18 MiB/s, got $r/100"
wire=$(grep -o '"tx_wire_bytes":[0-9]*' "$T/stats" | tail -1 | cut -d: -f2)
r=$(rate "$T/text")
note "text, datarate: $((r / 100)).$((r % 100)) MiB/s"
[ "$r" -ge 1300 ] || fail "datarate text through a 10 MiB/s cap: want >= 13 MiB/s, got $r/100"
app=$(stats_sum "$T/calls" bytes write send sendmsg writev)
wb=$(stats_sum "$T/calls" wire_bytes write send sendmsg writev)
note "call accounting: $app application bytes, $wb wire bytes"
[ "$app" -ge $((16 * MiB)) ] || fail "BONSAI_STATS: $app application bytes, want the whole file"
[ "$wb" -gt 0 ] && [ $((wb * 2)) -lt "$app" ] || fail "BONSAI_STATS: wire_bytes $wb not well below bytes $app"
# Two zstd levels at once: over zstd:1 and zstd:9 at 20 MiB/s, datarate runs zstd:1
# (zstd:9 is CPU-bound below the cap) and, waiting for the bucket with CPU to spare,
# sends chunks ahead of the link at zstd:9 (the mix; a 12.5 ms bucket, whose lead
# covers a zstd:9 chunk): two levels on the sender's two zstd streams (wire v3), each
# with its history; the receiver maps its second decoder when the first such frame
# arrives. Byte-exact (rate() compares). Measured: 87-89 MiB/s, 28-56 of 128 chunks
# at zstd:9. The spare CPU is what the mix needs: on a machine busy with other work the
# sender may find none in a run (0 chunks at zstd:9, seen under a concurrent build), so
# up to 3 runs, one of which must use both levels.
for try in 1 2 3; do
  r=$(rate "$T/text" BONSAI_COMPRESS_LEVELS=none,zstd:1,zstd:9 BONSAI_LIMITS=writes=20MiB/s:burst=256KiB)
  chunks=$(grep -o '"level_chunks":\[[0-9,]*' "$T/stats" | tail -1 | cut -d[ -f2)
  note "text, datarate over zstd:1 and zstd:9 at 20 MiB/s (run $try): $((r / 100)).$((r % 100)) MiB/s, chunks per level (none, zstd:1, zstd:9): $chunks"
  [ "$(echo "$chunks" | cut -d, -f2)" -gt 0 ] && [ "$(echo "$chunks" | cut -d, -f3)" -gt 0 ] && break
  [ "$try" = 3 ] && fail "datarate over zstd:1 and zstd:9 did not send chunks at both in 3 runs: $chunks"
done
r0=$(rate "$T/rand" BONSAI_COMPRESS_POLICY=fixed:none)
r1=$(rate "$T/rand")
note "random bytes: none $r0, datarate $r1 (MiB/s x100)"
[ "$r0" -le 1150 ] || fail "the cap does not hold on wire bytes: $r0/100 MiB/s"
[ $((r1 * 100)) -ge $((r0 * 85)) ] || fail "datarate on random bytes: $r1 vs none $r0"
[ "$wire" -gt 0 ] || fail "no wire bytes recorded"
exit 0
