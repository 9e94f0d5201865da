#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# timeout: 50
# Supervised sendfile under many threads (issue 35): a static Go file server
# (net/http.FileServer: sendfile of up to 4 MiB a call on non-blocking sockets, from
# as many threads as goroutines are in system calls) with 8 concurrent downloads for
# 5 s holds a writes cap, with and without :fd=socket -- the bytes received stay
# within [0.6, 1.1] x cap x time -- and a 1 KiB request made meanwhile is answered
# within 2 s. Before the supervisor reserved a call's units before letting it go and
# bounded a sendfile to one chunk, such a server got 2.2x its cap.
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd go curl
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/scenarios/eventloop_servers.sh"  # el_build_go: the Go file server the streaming bench measures
el_build_go "$BONSAI_BUILD/scenarios/bin" 2> "$T/gobuild.log" || skip "go cannot build the file server: $(tail -3 "$T/gobuild.log")"
GOSRV=$BONSAI_BUILD/scenarios/bin/fileserver
mkdir -p "$T/www"
truncate -s 256M "$T/www/big"   # sparse: sendfile reads zero pages, no disk
head -c 1024 /dev/urandom > "$T/www/small"
CAP=$((4 * MiB)) SECS=5 CLIENTS=8

# run_case NAME LIMITS: the server under LIMITS, CLIENTS downloads for SECS s, one small request.
run_case() {
  local name=$1 limits=$2 port i total=0 n small
  port=$(free_port)
  "$CTL" run -s "$name" -l "$limits" -- "$GOSRV" "127.0.0.1:$port" "$T/www" > "$T/$name.out" 2> "$T/$name.err" &
  local srv=$!
  cleanup_hooks+=("kill $srv 2>/dev/null")
  for i in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$port/small" && break; sleep 0.05; done
  curl -s -o /dev/null "http://127.0.0.1:$port/small" || fail "$name: the server did not start: $(cat "$T/$name.err")"
  grep -q 'NO LIMITS' "$T/$name.err" && fail "$name: run did not supervise the static Go server"
  local pids=()
  for i in $(seq 1 $CLIENTS); do
    curl -s -o "$T/$name.c$i" --max-time $SECS "http://127.0.0.1:$port/big" &
    pids+=($!)
  done
  sleep 2
  small=$(curl -s -o "$T/$name.small" -w '%{time_total}' --max-time 10 "http://127.0.0.1:$port/small") ||
    fail "$name: the small request failed (${small:-no answer})"
  cmp -s "$T/$name.small" "$T/www/small" || fail "$name: the small request got the wrong bytes"
  for i in "${pids[@]}"; do wait "$i"; done
  for i in $(seq 1 $CLIENTS); do
    n=$(stat -c %s "$T/$name.c$i" 2>/dev/null || echo 0)
    total=$((total + n))
    cmp -s -n "$n" "$T/$name.c$i" "$T/www/big" || fail "$name: client $i got wrong bytes"
  done
  kill $srv 2>/dev/null
  wait $srv 2>/dev/null
  note "$name: $CLIENTS clients received $total bytes in $SECS s; a 1 KiB request took ${small} s"
  check_rate "$name: Go sendfile, $limits" "$total" "$SECS" "$CAP" 0.6 1.1
  check_between "$name: 1 KiB request during the run (s)" "$small" 0 2
}

run_case gs 'writes=4MiB/s'
run_case gk 'writes=4MiB/s:fd=socket'
exit 0
