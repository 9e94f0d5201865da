#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The datarate policy on text that repeats within zstd's window (issue 53; the grid's
# REPEAT4: bench/scenarios/compress_bench.sh, BENCH=full): 4 MiB of text sent round and round at a
# 100 MiB/s cap, where the sender is CPU-bound. One-shot calibration puts every level at
# the same ~3.5x there, so the model kept the stream on lz4/zstd:1, which cannot reach
# 4 MiB back (0.88 of `zstd --adapt | pv -L`); zstd:3 and up find the repeats (25x and
# more). The policy now probes the first level with the window's reach directly and
# judges it by the rates (docs/notes/compression-measured.md#long-repeated-text-issue-53).
# Measured on a quiet 2-core machine: datarate 960-1150 MiB/s, `zstd --adapt` 170-320.
# Here: datarate must reach 1.3x `zstd --adapt | pv -L 100m` on the same data and send
# most of its chunks at zstd:3 or above; the bytes must arrive exact.
# timeout: 60
# parallel: no (a CPU-bound rate against another CPU-bound rate, side by side)
. "$(dirname "$0")/lib/lib.sh"
need_cmd zstd
need_cmd pv
need_cmd zcat
PEER=$PRE/compress_peer
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"
changelog_text "$T/text" 4
[ "$(stat -c %s "$T/text")" = $((4 * MiB)) ] || skip "no 4 MiB of changelog text on this machine"

# datarate: 1 s at the cap, the file sent round again (compress_peer --duration). What
# arrives goes through a FIFO to cmp against the file round and round (a GiB: not to disk).
rm -f "$T/port"
mkfifo "$T/fifo"
cmp "$T/fifo" <(while cat "$T/text"; do :; done) > "$T/cmp.out" 2>&1 &
cpid=$!
env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1 "$PEER" --listen 0 --port-file "$T/port" --recv "$T/fifo" \
  > "$T/l.log" 2>&1 &
lpid=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
[ -s "$T/port" ] || fail "listener did not start"
env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" BONSAI_COMPRESS_POLICY=datarate \
  BONSAI_LIMITS="writes=100MiB/s" BONSAI_COMPRESS_STATS="$T/stats" \
  "$PEER" --connect "$(cat "$T/port")" --send "$T/text" --size 131072 --duration 1000 > "$T/c.log" 2>&1 ||
  { cat "$T/c.log" >&2; fail "sender failed"; }
wait $lpid || { cat "$T/l.log" >&2; fail "receiver failed"; }
sent=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' "$T/c.log")
rate=$(sed -n 's/.*mibps=\([0-9.]*\).*/\1/p' "$T/c.log")
[ -n "$sent" ] && [ -n "$rate" ] || { cat "$T/c.log" >&2; fail "no rate from the sender"; }
# Exact: what arrived is the file round and round, cut where the sender stopped (cmp
# ends at the FIFO's end: "EOF on FIFO after byte N").
wait $cpid
grep -q "EOF on $T/fifo after byte $sent," "$T/cmp.out" || { cat "$T/cmp.out" >&2; fail "bytes differ (sent $sent)"; }
# level_chunks: none, lz4, zstd:1, zstd:3, ... (the default list)
read -r low high < <(grep -o '"level_chunks":\[[0-9,]*' "$T/stats" | head -1 | tr -dc '0-9,\n' |
  awk -F, '{ for (i = 1; i <= NF; i++) if (i <= 3) l += $i; else h += $i; print l + 0, h + 0 }')
note "datarate ${rate} MiB/s at a 100 MiB/s cap; chunks below zstd:3 ${low}, at zstd:3 or above ${high}"
[ "${high:-0}" -gt "${low:-0}" ] || fail "most chunks below zstd:3 ($low against $high): the repeats were not found"

# zstd --adapt | pv -L 100m | zstd -d on 512 MiB of the same stream.
n=$((512 * MiB))
t0=$(date +%s%N)
(while cat "$T/text"; do :; done) | head -c $n | zstd -q --adapt -c | pv -q -L 100m | zstd -q -d -c |
  wc -c > "$T/adapt.n"
t1=$(date +%s%N)
[ "$(cat "$T/adapt.n")" = "$n" ] || fail "zstd --adapt pipeline passed $(cat "$T/adapt.n") of $n bytes"
adapt=$(awk -v n=$n -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / ((b - a) / 1e9) / 1048576 }')
note "zstd --adapt | pv -L 100m: ${adapt} MiB/s"
awk -v d="$rate" -v z="$adapt" 'BEGIN { exit !(d >= 1.3 * z) }' ||
  fail "datarate ${rate} MiB/s is not 1.3x zstd --adapt's ${adapt}"
exit 0
