#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Non-blocking senders compress (issue 12 item 2): sockets non-blocking from connect
# or accept (SOCK_NONBLOCK, accept4), written whenever writable with epoll level- and
# edge-triggered, sendfile, many connections, MSG_DONTWAIT on a blocking socket; the
# endings that must still deliver every buffered byte (shutdown, close at once, exit
# without closing, waiting only for POLLIN / EPOLLIN), a fork while bytes are buffered
# (never sent twice); and a
# byte cap: text through 8 MiB/s at a multiple of the cap, random bytes at the cap.
# Receivers are slowed by a read cap so the senders' sockets fill. Exact bytes each time.
# sanitized: yes
# timeout: 40
. "$(dirname "$0")/lib/lib.sh"
need_cmd zcat python3
need_prog comp_nonblock
PEER=$PRE/compress_peer  # built by the Makefile from tests/preload/compress_peer.c
[ -x "$PEER" ] || fail "no $PEER: make it (make test-integration builds it)"
changelog_text "$T/text16" 16
head -c $((3 * MiB)) "$T/text16" > "$T/text"
[ "$(stat -c %s "$T/text")" -ge $((2 * MiB)) ] || skip "not enough changelog text on this machine"
head -c $((1 * MiB)) /dev/urandom > "$T/rand"
cat "$T/text" "$T/rand" > "$T/mixed"
SIZE=$(stat -c %s "$T/mixed")

TX="BONSAI_COMPRESS_TO=127.0.0.1:* BONSAI_COMPRESS_POLICY=fixed:zstd:1"
RX="BONSAI_COMPRESS_ACCEPT=1 BONSAI_LIMITS=read=40MiB/s"

# start_rx ARGS...: a receiver (compress_peer --listen) into $T/out; sets RPID.
start_rx() {
  rm -f "$T/port" "$T/out"*
  # shellcheck disable=SC2086
  env LD_PRELOAD="$PRELOAD" $RX "$PEER" --listen 0 --port-file "$T/port" --recv "$T/out" "$@" > "$T/r.log" 2>&1 &
  RPID=$!
  local i
  for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  [ -s "$T/port" ] || fail "receiver did not start"
}
# check NAME FILE: waits for the receiver, compares every output file with FILE.
check() {
  wait "$RPID" || { cat "$T/r.log" >&2; fail "$1: receiver failed"; }
  local k
  for k in "$T"/out*; do cmp -s "$2" "$k" || fail "$1: bytes differ in $k"; done
  note "$1: ok"
}
# compressed NAME: the sender's stats show fewer wire than application bytes.
compressed() {
  local app wire
  app=$(grep -ho '"tx_app_bytes":[0-9]*' "$T"/stats.* | awk -F: '{ s += $2 } END { print s + 0 }')
  wire=$(grep -ho '"tx_wire_bytes":[0-9]*' "$T"/stats.* | awk -F: '{ s += $2 } END { print s + 0 }')
  [ "$app" -gt 0 ] && [ "$wire" -lt "$app" ] || fail "$1: not compressed (app=$app wire=$wire)"
}
# peer NAME FILE SENDER_ARGS [RECEIVER_ARGS [raw]]: compress_peer on both sides
# (raw: writes below 1 KiB go out as raw frames, so no gain is checked).
peer() {
  local name=$1 file=$2 sargs=$3 rargs=${4:-} raw=${5:-}
  rm -f "$T"/stats.*
  # shellcheck disable=SC2086
  start_rx $rargs
  # shellcheck disable=SC2086
  env LD_PRELOAD="$PRELOAD" $TX BONSAI_COMPRESS_STATS="$T/stats.%p" timeout 60 "$PEER" --connect "$(cat "$T/port")" \
    --send "$file" $sargs > "$T/s.log" 2>&1 || { cat "$T/s.log" >&2; fail "$name: sender failed"; }
  check "$name" "$file"
  [ -n "$raw" ] || compressed "$name"
}
# nb NAME MODE [RECEIVER_ARGS]: comp_nonblock's endings.
nb() {
  local name=$1 mode=$2 rargs=${3:-}
  rm -f "$T"/stats.*
  # shellcheck disable=SC2086
  start_rx $rargs
  env LD_PRELOAD="$PRELOAD" $TX BONSAI_COMPRESS_STATS="$T/stats.%p" timeout 60 "$PRE/comp_nonblock" \
    "$(cat "$T/port")" "$T/mixed" "$mode" > "$T/s.log" 2>&1 || { cat "$T/s.log" >&2; fail "$name: sender failed"; }
  check "$name" "$T/mixed"
  compressed "$name"
  local eagain
  eagain=$(field "$(cat "$T/s.log")" eagain)
  [ "${eagain:-0}" -gt 0 ] || fail "$name: the sender's socket never filled (eagain=$eagain): nothing was buffered"
}

peer "epoll level-triggered sender, epoll receiver" "$T/mixed" "--nonblock --size 65536" "--nonblock --wait epoll"
peer "epoll edge-triggered sender, poll receiver" "$T/mixed" "--nonblock et --size rand" "--nonblock --wait poll"
peer "tiny writes, edge-triggered" "$T/text" "--nonblock et --size 100" "" raw
peer "sendfile to a non-blocking socket" "$T/mixed" "--nonblock --api sendfile" ""
peer "16 connections, edge-triggered" "$T/text" "--nonblock et --conns 16 --size rand" "--conns 16"
peer "writev, select receiver" "$T/mixed" "--nonblock --api writev --size 200000" "--wait select"
# A slower receiver: the sender's last frame is then most likely still buffered at
# its ending (without the library's flush in poll/epoll, pollin/epollin hang).
RX="BONSAI_COMPRESS_ACCEPT=1 BONSAI_LIMITS=read=4MiB/s"
nb "half-close after buffered writes" shutdown
nb "close with buffered bytes" close
nb "exit without closing, bytes buffered" exit
nb "last write, then only POLLIN" pollin "--expect $SIZE"
nb "last write, then only EPOLLIN (edge-triggered)" epollin "--expect $SIZE"
nb "last write, then only EPOLLIN through epoll_pwait2" epollin2 "--expect $SIZE"
nb "last write, then only select's read set" selectin "--expect $SIZE"
nb "fork while bytes are buffered" fork
nb "MSG_DONTWAIT on a blocking socket" dontwait

# Threads sharing the socket, a signal handler polling it meanwhile: every 4 KiB
# record whole, each thread's in order, none lost or doubled. The receiver reads
# slowly (4 MiB/s of wire) so that the socket fills and writes are refused.
RX="BONSAI_COMPRESS_ACCEPT=1 BONSAI_LIMITS=read=4MiB/s"
rm -f "$T"/stats.*
start_rx
env LD_PRELOAD="$PRELOAD" $TX BONSAI_COMPRESS_STATS="$T/stats.%p" timeout 60 "$PRE/comp_nonblock" \
  "$(cat "$T/port")" "$T/mixed" threads > "$T/s.log" 2>&1 || { cat "$T/s.log" >&2; fail "threads: sender failed"; }
wait "$RPID" || { cat "$T/r.log" >&2; fail "threads: receiver failed"; }
python3 - "$T/mixed" "$T/out" <<'PY' || fail "threads: records wrong"
import sys
text, out = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
R, N, T = 4096, 300, 4
if len(out) != R * N * T:
    sys.exit(f"{len(out)} bytes, want {R * N * T}")
nxt = [0] * T
for i in range(0, len(out), R):
    rec = out[i:i + R]
    t, n = int(rec[2:3]), int(rec[6:12])
    h = len(b"t=%d n=%06d " % (t, n))
    frm = ((t * N + n) * 8209) % (len(text) - R)
    if n != nxt[t] or rec[h:] != text[frm:frm + R - h]:
        sys.exit(f"record at {i}: thread {t} number {n}, want {nxt[t]}, body {'ok' if rec[h:] == text[frm:frm + R - h] else 'wrong'}")
    nxt[t] += 1
PY
compressed "threads"
eagain=$(field "$(cat "$T/s.log")" eagain)
[ "${eagain:-0}" -gt 0 ] || fail "threads: the socket never filled"
note "4 threads and a signal handler on one socket: ok ($eagain writes refused)"

# A byte cap on the wire: text at a multiple of it, random bytes at it (the
# datarate policy: a non-blocking sender's waits are seen).
RX="BONSAI_COMPRESS_ACCEPT=1"
TX="BONSAI_COMPRESS_TO=127.0.0.1:*"
rate() {  # rate FILE SENDER_ARGS: application MiB/s x100 through writes=8MiB/s
  start_rx
  env LD_PRELOAD="$PRELOAD" $TX BONSAI_LIMITS=writes=8MiB/s "$PEER" --connect "$(cat "$T/port")" --send "$1" $2 \
    > "$T/s.log" 2>&1 || { cat "$T/s.log" >&2; fail "capped sender failed"; }
  wait "$RPID" || fail "capped receiver failed"
  sed 's/.*mibps=\([0-9.]*\).*/\1/' "$T/s.log" | awk '{ printf "%d", $1 * 100 }'
}
r=$(rate "$T/text16" "--nonblock et --size 65536")
cmp -s "$T/text16" "$T/out" || fail "capped text: bytes differ"
note "text, non-blocking sender, 8 MiB/s cap: $(awk -v r="$r" 'BEGIN { printf "%.2f", r / 100 }') MiB/s of application data"
[ "$r" -ge 1500 ] || fail "non-blocking text through an 8 MiB/s cap: want >= 15 MiB/s, got $r/100"
head -c $((6 * MiB)) /dev/urandom > "$T/rand6"
r=$(rate "$T/rand6" "--nonblock --size 65536")
cmp -s "$T/rand6" "$T/out" || fail "capped random: bytes differ"
note "random bytes, non-blocking sender, 8 MiB/s cap: $(awk -v r="$r" 'BEGIN { printf "%.2f", r / 100 }') MiB/s"
[ "$r" -le 900 ] || fail "the cap does not hold for a non-blocking sender: $r/100 MiB/s"
[ "$r" -ge 650 ] || fail "random bytes through a non-blocking sender lose too much: $r/100 MiB/s"
exit 0
