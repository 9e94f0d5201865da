#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compression with real servers (issue 12: "event-loop servers get compression"): a
# server under a 4 MiB/s socket cap with BONSAI_COMPRESS_TO, a client decoding with
# BONSAI_COMPRESS_ACCEPT, 8 MiB of text each time:
#   python3 -m http.server (blocking socket, socket.sendfile) -> curl (non-blocking, poll);
#   an asyncio server (non-blocking transport writes, drain) -> an asyncio client;
#   node's http server (libuv: non-blocking writev) -> curl, where node is installed.
# Each body arrives byte-exact, faster than the cap (so compressed on the wire: raw it
# could not beat 1.1x), and the client's compression totals show it decoded frames.
. "$(dirname "$0")/lib.sh"
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
