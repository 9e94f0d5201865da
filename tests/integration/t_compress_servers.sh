#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression with real servers (issue 12: "event-loop servers get compression"): a
# server under a 4 MiB/s socket cap with BONSAI_COMPRESS_TO, a client decoding with
# BONSAI_COMPRESS_ACCEPT, 8 MiB of text each time:
#   python3 -m http.server (blocking socket, socket.sendfile) -> curl (non-blocking, poll);
#   an asyncio server (non-blocking transport writes, drain) -> an asyncio client;
#   node's http server (libuv: non-blocking writev) -> curl, where node is installed;
#   nginx (epoll, `sendfile on`, keep-alive, Range, parallel clients) -> curl;
#   redis-server <-> redis-cli (both ways compressed: an 8 MiB value set and read back).
# Each body arrives byte-exact, faster than the cap (so compressed on the wire: raw it
# could not beat 1.1x), and the client's compression totals show it decoded frames.
# timeout: 50
# parallel: no (compressed bodies must beat the cap: compression needs the CPU)
. "$(dirname "$0")/lib/lib.sh"
need_cmd curl python3 zcat
CAP=4
mkdir "$T/www"
changelog_text "$T/www/body" 8
SIZE=$(stat -c %s "$T/www/body")
[ "$SIZE" -ge $((4 * MiB)) ] || skip "not enough changelog text on this machine"

TX=(env LD_PRELOAD="$PRELOAD" "BONSAI_COMPRESS_TO=127.0.0.1:*" "BONSAI_LIMITS=writes=${CAP}MiB/s:fd=socket")
RX=(env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_ACCEPT=1)

# wait_port PORT: something listens there (bash's /dev/tcp: no client that would read
# the compressed bytes as plain ones), within 10 s.
wait_port() {
  local i
  for i in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  fail "nothing listens on port $1"
}

# fetch NAME CMD...: runs the client CMD (it writes $T/NAME.out, and may write its own
# transfer time to $T/NAME.out.secs), then checks the body, the rate against the cap and
# the client's compression totals ($T/NAME.cstats.PID).
fetch() {
  local name=$1
  shift
  timed "$name" "${RX[@]}" BONSAI_COMPRESS_STATS="$T/$name.cstats.%p" "$@"
  wait "$!"
  local secs
  secs=$(timed_ok "$name")
  # python3 may start slowly (a pyenv shim: 0.35 s); its client times its own transfer.
  [ -s "$T/$name.out.secs" ] && secs=$(cat "$T/$name.out.secs")
  same_data "$T/www/body" "$T/$name.out"
  # Sanitized or loaded, the rate may only drop: 1.5x still needs compression.
  check_rate "$name" "$SIZE" "$secs" $((CAP * MiB)) 1.5 1000
  local app wire
  app=$(cat "$T/$name".cstats.* | grep -o '"rx_app_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
  wire=$(cat "$T/$name".cstats.* | grep -o '"rx_wire_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
  [ "$app" -ge "$SIZE" ] || fail "$name: the client decoded $app bytes of a $SIZE-byte body"
  [ "$wire" -gt 0 ] && [ "$((wire * 3 / 2))" -lt "$app" ] || fail "$name: $wire wire bytes for $app (not compressed)"
  note "$name: $app bytes from $wire on the wire"
}

# 1. python3 http.server: a blocking socket written with sendfile.
port=$(free_port)
"${TX[@]}" python3 -m http.server "$port" --bind 127.0.0.1 --directory "$T/www" > "$T/http.log" 2>&1 &
cleanup_hooks+=("kill $!")
wait_port "$port"
fetch http_server curl -s -f -o "$T/http_server.out" "http://127.0.0.1:$port/body"

# 2. asyncio on both sides.
cat > "$T/aio.py" <<'PY'
import asyncio, sys, time
mode, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
async def serve(reader, writer):
    data = open(path, 'rb').read()
    for i in range(0, len(data), 65536):
        writer.write(data[i:i + 65536])
        await writer.drain()
    writer.close()
    await writer.wait_closed()
async def main():
    if mode == 'server':
        server = await asyncio.start_server(serve, '127.0.0.1', port)
        async with server:
            await server.serve_forever()
    start = time.monotonic()
    reader, writer = await asyncio.open_connection('127.0.0.1', port)
    with open(path, 'wb') as out:
        while True:
            b = await reader.read(1 << 16)
            if not b:
                break
            out.write(b)
    with open(path + '.secs', 'w') as f:
        f.write('%.3f\n' % (time.monotonic() - start))
    writer.close()
asyncio.run(main())
PY
port=$(free_port)
"${TX[@]}" python3 "$T/aio.py" server "$port" "$T/www/body" > "$T/aio.log" 2>&1 &
cleanup_hooks+=("kill $!")
wait_port "$port"
fetch asyncio python3 "$T/aio.py" client "$port" "$T/asyncio.out"

# 3. node, if installed (not a dependency of the build).
if command -v node > /dev/null 2>&1; then
  cat > "$T/server.js" <<'JS'
const http = require('http'), fs = require('fs');
http.createServer((req, res) => { res.writeHead(200); fs.createReadStream(process.argv[3]).pipe(res); })
  .listen(Number(process.argv[2]), '127.0.0.1');
JS
  port=$(free_port)
  "${TX[@]}" node "$T/server.js" "$port" "$T/www/body" > "$T/node.log" 2>&1 &
  cleanup_hooks+=("kill $!")
  wait_port "$port"
  fetch node curl -s -f -o "$T/node.out" "http://127.0.0.1:$port/"
else
  note "node not installed: its case is skipped"
fi

# 4. nginx (master and two workers: epoll, non-blocking sockets, `sendfile on` with
# tcp_nopush), where installed: one fetch timed like the others, then on one
# keep-alive connection four requests (the body, a small file, the body's middle by a
# Range: sendfile at an offset, the body again), then four clients at once.
if command -v nginx > /dev/null 2>&1; then
  port=$(free_port)
  mkdir "$T/nginx"
  head -c 1000 "$T/www/body" > "$T/www/small"
  cat > "$T/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 2;
user $(id -un) $(id -gn);
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log info;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path $T/nginx; proxy_temp_path $T/nginx; fastcgi_temp_path $T/nginx;
  uwsgi_temp_path $T/nginx; scgi_temp_path $T/nginx;
  sendfile on;
  tcp_nopush on;
  server { listen 127.0.0.1:$port; root $T/www; }
}
CONF
  "${TX[@]}" nginx -p "$T/nginx" -e "$T/nginx/error.log" -c "$T/nginx/nginx.conf" > "$T/nginx.log" 2>&1 &
  cleanup_hooks+=("kill $!")
  wait_port "$port"
  fetch nginx curl -s -f -o "$T/nginx.out" "http://127.0.0.1:$port/body"
  url=http://127.0.0.1:$port
  # (--next keeps the connection; it starts a new set of options, so -r covers one URL.)
  opts=(-s -f -w '%{num_connects}\n')
  "${RX[@]}" timeout 60 curl "${opts[@]}" -o "$T/k1" "$url/body" -o "$T/k2" "$url/small" \
    --next "${opts[@]}" -r 1000000-2999999 -o "$T/k3" "$url/body" \
    --next "${opts[@]}" -o "$T/k4" "$url/body" > "$T/keepalive.connects" ||
    fail "nginx: keep-alive requests failed"
  connects=$(awk '{ s += $1 } END { print s + 0 }' "$T/keepalive.connects")
  [ "$connects" = 1 ] || fail "nginx: the requests took $connects connections, not one"
  same_data "$T/www/body" "$T/k1"
  same_data "$T/www/small" "$T/k2"
  tail -c +1000001 "$T/www/body" | head -c 2000000 > "$T/range.want"
  same_data "$T/range.want" "$T/k3"
  same_data "$T/www/body" "$T/k4"
  pids=()
  for i in 1 2 3 4; do
    "${RX[@]}" timeout 60 curl -s -f -o "$T/par$i" "$url/body" &
    pids+=("$!")
  done
  for i in 1 2 3 4; do
    wait "${pids[$((i - 1))]}" || fail "nginx: parallel client $i failed"
    same_data "$T/www/body" "$T/par$i"
  done
  note "nginx: keep-alive (4 requests, one a Range) and 4 parallel clients byte-exact"
else
  note "nginx not installed: its case is skipped"
fi

# 5. redis, where installed: both ends compress and decode (commands go one way,
# replies the other), both under the cap. An 8 MiB value set from a file and read back;
# the GET's time checked against the cap like the fetches above.
if command -v redis-server > /dev/null 2>&1 && command -v redis-cli > /dev/null 2>&1; then
  port=$(free_port)
  BOTH=("${TX[@]}" BONSAI_COMPRESS_ACCEPT=1)
  "${BOTH[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$T" --daemonize no > "$T/redis.log" 2>&1 &
  cleanup_hooks+=("kill $!")
  wait_port "$port"
  "${BOTH[@]}" timeout 60 redis-cli -p "$port" -x set body < "$T/www/body" > "$T/redis.set" || fail "redis: SET failed"
  grep -q OK "$T/redis.set" || fail "redis: SET said $(cat "$T/redis.set")"
  start=$(now_ns)
  "${BOTH[@]}" BONSAI_COMPRESS_STATS="$T/redis.cstats.%p" timeout 60 redis-cli -p "$port" --raw get body > "$T/redis.get" ||
    fail "redis: GET failed"
  secs=$(secs_since "$start")
  head -c "$SIZE" "$T/redis.get" > "$T/redis.out"
  same_data "$T/www/body" "$T/redis.out"
  check_rate redis "$SIZE" "$secs" $((CAP * MiB)) 1.5 1000
  app=$(cat "$T"/redis.cstats.* | grep -o '"rx_app_bytes":[0-9]*' | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
  [ "$app" -ge "$SIZE" ] || fail "redis: the client decoded $app bytes of a $SIZE-byte value"
  note "redis: 8 MiB value set and read back byte-exact in $secs s"
else
  note "redis not installed: its case is skipped"
fi
