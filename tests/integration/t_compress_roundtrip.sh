#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression end to end (issue 5): two processes under libbonsai on 127.0.0.1, one
# compressing (BONSAI_COMPRESS_TO), one decoding (BONSAI_COMPRESS_ACCEPT). Exact bytes
# for every read/write call, both directions, several connections on threads,
# poll/select/epoll-driven receivers, sendfile, and plain streams left untouched.
# sanitized: yes
# timeout: 40
. "$(dirname "$0")/lib/lib.sh"
need_cmd zcat
PEER=$PRE/compress_peer  # built by the Makefile from tests/preload/compress_peer.c
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"

# Data: Debian changelog text, random bytes, and a mix of the two.
changelog_text "$T/text" 6
head -c $((2 * MiB)) /dev/urandom > "$T/rand"
cat "$T/text" "$T/rand" "$T/text" | head -c $((9 * MiB)) > "$T/mixed"
[ "$(stat -c %s "$T/text")" -ge $((1 * MiB)) ] || skip "no changelog text on this machine"

# xfer NAME FILE SENDER_ENV RECEIVER_ENV SENDER_ARGS RECEIVER_ARGS [reverse]
# Receiver listens (or, reversed, sends from the listening side); checks exact bytes.
xfer() {
  local name=$1 file=$2 senv=$3 renv=$4 sargs=$5 rargs=$6 rev=${7:-}
  rm -f "$T/port" "$T/out"*
  local lside=(--recv "$T/out") cside=(--send "$file")
  [ -n "$rev" ] && lside=(--send "$file") cside=(--recv "$T/out")
  local largs=$rargs cargs=$sargs lenv=$renv cenv=$senv
  [ -n "$rev" ] && largs=$sargs cargs=$rargs lenv=$senv cenv=$renv
  # shellcheck disable=SC2086
  env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_STATS="$T/stats.l" $lenv "$PEER" --listen 0 --port-file "$T/port" \
    "${lside[@]}" $largs > "$T/l.log" 2>&1 &
  local pid=$! i
  for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  [ -s "$T/port" ] || fail "$name: listener did not start"
  # shellcheck disable=SC2086
  env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_STATS="$T/stats.c" $cenv "$PEER" --connect "$(cat "$T/port")" \
    "${cside[@]}" $cargs > "$T/c.log" 2>&1 || { cat "$T/c.log" >&2; fail "$name: connecting side failed"; }
  wait $pid || { cat "$T/l.log" >&2; fail "$name: listening side failed"; }
  local k
  if [ -f "$T/out" ]; then
    cmp -s "$file" "$T/out" || fail "$name: bytes differ"
  else
    for k in "$T"/out.*; do cmp -s "$file" "$k" || fail "$name: bytes differ in $k"; done
  fi
  note "$name: ok"
}

TX="BONSAI_COMPRESS_TO=127.0.0.1:*"
RX="BONSAI_COMPRESS_ACCEPT=1"
# stats_field FILE KEY: sum of KEY over the JSON lines in FILE.
stats_field() { grep -o "\"$2\":[0-9]*" "$1" | awk -F: '{ s += $2 } END { print s + 0 }'; }

rm -f "$T"/stats.*
xfer "write->read zstd:3" "$T/text" "$TX BONSAI_COMPRESS_POLICY=fixed:zstd:3" "$RX" "--size 65536" "--size rand"
app=$(stats_field "$T/stats.c" tx_app_bytes) wire=$(stats_field "$T/stats.c" tx_wire_bytes)
[ "$wire" -gt 0 ] && [ $((app / wire)) -ge 2 ] || fail "text not compressed: app=$app wire=$wire"
[ "$(stats_field "$T/stats.l" rx_app_bytes)" = "$app" ] || fail "receiver decoded a different byte count"
# Memory (docs/reference/compression.md, Memory): a sender maps its zstd context for the 2 MiB
# window and commits the 8 MiB window's in place when its frames widen (a receiver its
# decoder likewise: 3.0 MiB, 9.0 once widened). Within 6 MiB of workspaces a sender
# has the first only: it goes on compressing with 2 MiB frames; within 10 a receiver
# decodes the widened frames.
rm -f "$T"/stats.*
xfer "sender within 6 MiB: 2 MiB frames" "$T/text" "$TX BONSAI_COMPRESS_POLICY=fixed:zstd:3 BONSAI_COMPRESS_MEM_MIB=6" \
  "$RX" "--size 65536" "--size rand"
app=$(stats_field "$T/stats.c" tx_app_bytes) wire=$(stats_field "$T/stats.c" tx_wire_bytes)
[ "$wire" -gt 0 ] && [ $((app / wire)) -ge 2 ] || fail "6 MiB: text not compressed: app=$app wire=$wire"
# The stats line says so: the most mapped (~5.1 MiB) and the widening refused.
peak=$(stats_field "$T/stats.c" mem_peak_bytes) refused=$(stats_field "$T/stats.c" mem_refused)
[ "$peak" -gt $((4 * MiB)) ] && [ "$peak" -le $((6 * MiB)) ] && [ "$refused" -ge 1 ] ||
  fail "6 MiB sender: mem_peak_bytes=$peak mem_refused=$refused"
rm -f "$T"/stats.*
xfer "receiver within 10 MiB: 8 MiB frames" "$T/text" "$TX BONSAI_COMPRESS_POLICY=fixed:zstd:3" \
  "$RX BONSAI_COMPRESS_MEM_MIB=10" "--size 65536" "--size rand"
peak=$(stats_field "$T/stats.l" mem_peak_bytes) refused=$(stats_field "$T/stats.l" mem_refused)
[ "$peak" -gt $((8 * MiB)) ] && [ "$peak" -le $((10 * MiB)) ] && [ "$refused" = 0 ] ||
  fail "10 MiB receiver: mem_peak_bytes=$peak mem_refused=$refused (3.0 MiB + 6.0 at the widening)"
xfer "send->recv rand sizes datarate" "$T/mixed" "$TX" "$RX" "--size rand --api send" "--size rand --api recv"
xfer "writev->readv lz4" "$T/mixed" "$TX BONSAI_COMPRESS_POLICY=fixed:lz4" "$RX" "--size rand --api writev" "--size rand --api readv"
xfer "sendmsg->recvmsg queue" "$T/mixed" "$TX BONSAI_COMPRESS_POLICY=queue" "$RX" "--size rand --api sendmsg" "--size rand --api recvmsg"
xfer "sendfile->recvfrom" "$T/text" "$TX BONSAI_COMPRESS_POLICY=fixed:zstd:1" "$RX" "--api sendfile" "--size rand --api recvfrom"
xfer "reverse: accepted side compresses" "$T/mixed" "$TX BONSAI_COMPRESS_POLICY=fixed:lz4" "$RX" "--size rand" "--size rand" rev
xfer "4 connections on threads" "$T/mixed" "$TX" "$RX" "--size rand --conns 4" "--size rand --conns 4"
for w in poll select epoll; do
  # The sender stays open 2.5 s after its last frame and the receiver stops at the
  # byte count: only the library's readiness report can wake the receiver (its
  # timeout is 1.5 s) for the decoded bytes it holds.
  xfer "$w-driven receiver, small reads" "$T/text" "$TX BONSAI_COMPRESS_POLICY=fixed:zstd:1" "$RX" \
    "--size 131072 --linger 2500" "--size 1000 --wait $w --wait-ms 1500 --expect $(stat -c %s "$T/text")"
  xfer "$w-driven receiver, random reads" "$T/mixed" "$TX" "$RX" "--size rand" "--size rand --wait $w"
done
# Plain streams stay plain: an unconfigured destination, and a receiver without the library.
rm -f "$T"/stats.*
xfer "unconfigured destination" "$T/mixed" "BONSAI_COMPRESS_TO=127.0.0.2:*" "$RX" "--size rand" "--size rand"
[ "$(stats_field "$T/stats.c" tx_wire_bytes)" = 0 ] || fail "an unconfigured destination was framed"
xfer "plain sender, decoding receiver" "$T/rand" "BONSAI_LOG=warn" "$RX" "--size rand" "--size rand --wait poll"
rm -f "$T/port" "$T/out"
"$PEER" --listen 0 --port-file "$T/port" --recv "$T/out" > /dev/null &
pid=$!
for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_TO=127.0.0.1:* "$PEER" --connect "$(cat "$T/port")" --send "$T/text" > /dev/null
wait $pid
head -c 7 "$T/out" | od -An -tx1 | grep -q '89 42 4e 5a 0d 0a 1a' || fail "no stream header on the wire"
note "a receiver without the library sees the stream header (framed bytes, as documented)"
exit 0
