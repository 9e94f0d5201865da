#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression's memory given back (docs/reference/compression.md, Memory): a sender with 8
# connections of 6 MiB of text each (every one past 2 MiB, so each zstd context widened
# to the 8 MiB window and touched it) and a receiver decoding them, both python3 under
# the library. Records are kept for reuse; a widened connection's zstd pages go back to
# the system when it closes. The sender's resident memory after closing must fall by
# at least half of what the 8 connections added (~40 MiB; it kept all of it before),
# every body arrive byte-exact, and the stats line show the peak memory and no refusal.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_cmd python3 zcat
[ -n "${SAN_RT:-}" ] && skip "resident memory under a sanitizer's shadow is not the library's"
N=8
changelog_text "$T/text" 6
SIZE=$(stat -c %s "$T/text")
[ "$SIZE" -ge $((4 * MiB)) ] || skip "not enough changelog text on this machine"

cat > "$T/recv.py" <<'PY'
import hashlib, socket, sys, threading
l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(64)
open(sys.argv[1], 'w').write(str(l.getsockname()[1]))
n, want = int(sys.argv[2]), sys.argv[3]
bad = []
def drain(c):
    h = hashlib.sha1()
    while True:
        b = c.recv(1 << 16)
        if not b: break
        h.update(b)
    c.close()
    if h.hexdigest() != want: bad.append(1)
ts = []
for _ in range(n):
    c, _ = l.accept(); t = threading.Thread(target=drain, args=(c,)); t.start(); ts.append(t)
[t.join() for t in ts]
print(len(bad))
PY
cat > "$T/send.py" <<'PY'
import socket, sys, threading, time
port, n, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
data = open(path, 'rb').read()
def rss():
    return int([x.split()[1] for x in open('/proc/self/status') if x.startswith('VmRSS')][0])
socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(n)]
start = rss()
ts = [threading.Thread(target=s.sendall, args=(data,)) for s in socks]
[t.start() for t in ts]; [t.join() for t in ts]
busy = rss()
[s.close() for s in socks]
time.sleep(0.2)
print(start, busy, rss())
PY
want=$(sha1sum < "$T/text" | cut -d' ' -f1)
env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1 BONSAI_COMPRESS_STATS="$T/stats.r" \
  python3 "$T/recv.py" "$T/port" "$N" "$want" > "$T/recv.out" 2>&1 &
rpid=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || fail "the receiver did not start"
env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" BONSAI_COMPRESS_POLICY=fixed:zstd:3 \
  BONSAI_COMPRESS_STATS="$T/stats.s" python3 "$T/send.py" "$(cat "$T/port")" "$N" "$T/text" > "$T/send.out" 2>&1 ||
  { cat "$T/send.out" >&2; fail "the sender failed"; }
wait "$rpid" || { cat "$T/recv.out" >&2; fail "the receiver failed"; }
[ "$(tail -1 "$T/recv.out")" = 0 ] || fail "$(tail -1 "$T/recv.out") of $N bodies differ"
read -r start busy after < "$T/send.out"
note "sender RSS (KiB): $start before, $busy with $N widened connections, $after after closing them"
added=$((busy - start))
[ "$added" -gt $((N * 2 * 1024)) ] || fail "the connections added only $added KiB: not widened?"
[ "$after" -le $((busy - added / 2)) ] || fail "RSS after closing $after KiB: the zstd pages were kept"
# stats_field FILE KEY: sum of KEY over the JSON lines in FILE (a pyenv shim's processes add zeros).
stats_field() { grep -o "\"$2\":[0-9]*" "$1" | awk -F: '{ s += $2 } END { print s + 0 }'; }
peak=$(stats_field "$T/stats.s" mem_peak_bytes)
[ "$peak" -ge $((N * 11 * MiB)) ] && [ "$(stats_field "$T/stats.s" mem_refused)" = 0 ] ||
  fail "sender mem_peak_bytes=$peak (want $N x 11.1 MiB), mem_refused=$(stats_field "$T/stats.s" mem_refused)"
note "sender mem_peak_bytes $peak, receiver $(stats_field "$T/stats.r" mem_peak_bytes)"
exit 0
