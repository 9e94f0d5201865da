# SPDX-License-Identifier: MIT
# Event-loop servers (sourced, not run): bench/scenarios/streaming.sh and the tests
# tests/integration/t_eventloop_*.sh start the same servers the same way, so this
# scenario lives where both include it (tests/scenarios/, not inside either room). Each serves the
# files of one directory (big: a large sparse file, small: 1 KiB) on 127.0.0.1:PORT:
#   nginx            nginx-light, master + 1 worker, daemon off, access_log off, sendfile on
#   nginx_nosendfile the same with sendfile off (writev of its output buffers)
#   node             http.createServer, fs.createReadStream(file).pipe(res) (libuv)
#   asyncio          python3 asyncio streams, 64 KiB writes each followed by drain()
#   go               a static Go net/http.FileServer (tests/scenarios/go/fileserver; CGO_ENABLED=0,
#                    so `bonsaictl run` supervises it)
# Needs nothing from lib.sh or common.sh: every path comes in as an argument.

EL_SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # tests/scenarios/

# el_files WWW BIG_MIB: WWW/big (sparse, BIG_MIB MiB) and WWW/small (1 KiB of random bytes).
el_files() {
  mkdir -p "$1"
  truncate -s "$(($2 * 1048576))" "$1/big"
  head -c 1024 /dev/urandom >"$1/small"
}

# el_have SERVER: the server's program is installed (nginx, node, python3, go to build).
el_have() {
  case $1 in
    nginx|nginx_nosendfile) command -v nginx >/dev/null 2>&1 ;;
    node) command -v node >/dev/null 2>&1 ;;
    asyncio) command -v python3 >/dev/null 2>&1 ;;
    go) command -v go >/dev/null 2>&1 ;;
    *) return 1 ;;
  esac
}

# el_build_go BINDIR: builds BINDIR/fileserver (static) when missing or older than its
# source; the Go build cache stays in BINDIR/gocache (a cold build takes ~30 s on 2 cores).
el_build_go() {
  local bin=$1/fileserver src=$EL_SRC_DIR/go/fileserver/main.go
  [ -x "$bin" ] && [ ! "$src" -nt "$bin" ] && return 0
  mkdir -p "$1"
  (cd "$EL_SRC_DIR/go/fileserver" && CGO_ENABLED=0 GO111MODULE=off GOCACHE="$1/gocache" GOPATH="$1/gopath" \
    go build -o "$bin" main.go) >&2 || return 1
}

# el_python: the real python3 (not a pyenv shim script: the server's start stays short).
el_python() { python3 -c 'import sys; print(sys.executable)'; }

# el_start SERVER PORT WWW DIR BINDIR [PREFIX...]: starts SERVER in a session of its own
# (setsid: its process group id is its pid) as `PREFIX... server-command`, output in
# DIR/SERVER.log; sets EL_PID. DIR is a private scratch directory (nginx's prefix, scripts);
# BINDIR holds the Go server (el_build_go). PREFIX is e.g. `bonsaictl run -s S -l ... --`.
el_start() {
  local server=$1 port=$2 www=$3 dir=$4 bindir=$5
  shift 5
  local cmd=()
  mkdir -p "$dir"
  case $server in
    nginx|nginx_nosendfile)
      local sf=on
      [ "$server" = nginx_nosendfile ] && sf=off
      mkdir -p "$dir/$server"
      cat >"$dir/$server/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
user $(id -un) $(id -gn);
pid $dir/$server/nginx.pid;
error_log $dir/$server/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir/$server; proxy_temp_path $dir/$server; fastcgi_temp_path $dir/$server;
  uwsgi_temp_path $dir/$server; scgi_temp_path $dir/$server;
  default_type application/octet-stream;
  sendfile $sf;
  server { listen 127.0.0.1:$port; root $www; }
}
CONF
      cmd=(nginx -p "$dir/$server" -e "$dir/$server/error.log" -c "$dir/$server/nginx.conf") ;;
    node)
      cat >"$dir/server.js" <<'JS'
// 'big' and 'small' from the directory argv[3], streamed with createReadStream().pipe(res).
const http = require('http'), fs = require('fs'), path = require('path');
const root = process.argv[3];
http.createServer((req, res) => {
  const file = path.join(root, path.basename(req.url.split('?')[0]));
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Length': st.size, 'Content-Type': 'application/octet-stream' });
    const s = fs.createReadStream(file);
    res.on('close', () => s.destroy());
    s.pipe(res);
  });
}).listen(Number(process.argv[2]), '127.0.0.1');
JS
      cmd=(node "$dir/server.js" "$port" "$www") ;;
    asyncio)
      cat >"$dir/aio_server.py" <<'PY'
# 'big' and 'small' from the directory argv[2]: asyncio streams, 64 KiB writes, drain().
import asyncio, os, sys
port, root = int(sys.argv[1]), sys.argv[2]
async def serve(reader, writer):
    try:
        head = await reader.readuntil(b'\r\n\r\n')
        target = head.split(b' ', 2)[1].decode().split('?')[0]
        path = os.path.join(root, os.path.basename(target))
        if not os.path.isfile(path):
            writer.write(b'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
            await writer.drain()
            return
        size = os.path.getsize(path)
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n'
                     b'Content-Length: %d\r\nConnection: close\r\n\r\n' % size)
        with open(path, 'rb') as f:
            while True:
                chunk = f.read(65536)
                if not chunk:
                    break
                writer.write(chunk)
                await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, IndexError, ValueError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, '127.0.0.1', port, backlog=1024)
    async with server:
        await server.serve_forever()
asyncio.run(main())
PY
      cmd=("$(el_python)" "$dir/aio_server.py" "$port" "$www") ;;
    go)
      cmd=("$bindir/fileserver" "127.0.0.1:$port" "$www") ;;
    *) echo "el_start: unknown server '$server'" >&2; return 2 ;;
  esac
  setsid "$@" "${cmd[@]}" >"$dir/$server.log" 2>&1 </dev/null &
  EL_PID=$!
}

# el_port: a TCP port on 127.0.0.1 nobody listens on now.
el_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# el_wait URL SECS: the URL answers 200 within SECS seconds (curl run behind the array
# EL_CLIENT_PREFIX if set: a decoding client for a compressing server).
el_wait() {
  local i
  for i in $(seq $(($2 * 10))); do
    ${EL_CLIENT_PREFIX[@]+"${EL_CLIENT_PREFIX[@]}"} curl -s -f -o /dev/null --max-time 1 "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# el_stop PID: ends the session el_start started (TERM, then KILL after 2 s).
el_stop() {
  [ -n "${1:-}" ] || return 0
  kill -TERM -- "-$1" 2>/dev/null || return 0
  local i
  for i in $(seq 20); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$1" 2>/dev/null
  return 0
}
