# SPDX-License-Identifier: MIT
# Helpers of the shares tests (issue 38; sourced, not run): a host capacity shared by two
# services a and b in one namespace, writers of each descriptor kind, rates from stat.
. "$(dirname "${BASH_SOURCE[0]}")/ctl_lib.sh"
need_cmd dd python3
cleanup_hooks+=('rm -f /dev/shm/${BONSAI_SHM_PREFIX}bonsai-host.*')
CAP=$((16 * MiB)) RATE_A=$((4 * MiB)) RATE_B=$((8 * MiB))

# shares_yaml CAP_MIB RATE_A_MIB RATE_B_MIB: a capacity on writes and two sharing services
# (both ceilings at the capacity), loaded.
shares_yaml() {
  cat > "$T/shares.yaml" <<YAML
version: 1
host:
  capacity:
    - calls: [writes]
      rate: ${1}MiB/s
services:
  a:
    scope: service
    limits:
      - calls: [writes]
        rate: ${2}MiB/s
        ceil: ${1}MiB/s
  b:
    scope: service
    limits:
      - calls: [writes]
        rate: ${3}MiB/s
        ceil: ${1}MiB/s
YAML
  "$CTL" load "$T/shares.yaml" >/dev/null || fail "load $T/shares.yaml"
}

# writer SERVICE KIND: a writer under the service, in the background ($! its pid): to a
# file, /dev/null, into a pipe, or to a socket on 127.0.0.1 (a sink outside bonsai reads
# it), blocking or not (nbsocket: an event loop's select and send).
writer() {
  local svc=$1 kind=$2
  case $kind in
    null) "$CTL" run -s "$svc" -- dd if=/dev/zero of=/dev/null bs=64k count=10000000 status=none & ;;
    file) "$CTL" run -s "$svc" -- dd if=/dev/zero of="$T/$svc.out" bs=64k count=100000 status=none & ;;
    pipe) "$CTL" run -s "$svc" -- sh -c 'dd if=/dev/zero bs=64k count=100000 status=none | cat >/dev/null' & ;;
    nbsocket) "$CTL" run -s "$svc" -- python3 -c '
import select, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setblocking(False)
buf = bytes(65536)
while True:
    select.select([], [s], [])
    try:
        s.send(buf)
    except BlockingIOError:
        pass' "$(cat "$T/port")" & ;;
    socket) "$CTL" run -s "$svc" -- python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
buf = bytes(65536)
while True:
    s.sendall(buf)' "$(cat "$T/port")" & ;;
  esac
  cleanup_hooks+=("stop_writer $!")  # a test that fails leaves no writer behind
}

# stop_writer PID: the writer and its children (a pipe's dd and cat) stopped.
stop_writer() { pkill -P "$1" 2>/dev/null; kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# sink: a TCP server on 127.0.0.1 outside bonsai that discards what it gets (port in $T/port).
sink() {
  python3 -c '
import socket, sys, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8)
open(sys.argv[1], "w").write(str(srv.getsockname()[1]))
def drain(c):
    while c.recv(1 << 20): pass
while True:
    c, _ = srv.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()' "$T/port" &
  cleanup_hooks+=("kill $! 2>/dev/null")
  local i
  for i in $(seq 1 50); do [ -s "$T/port" ] && return 0; sleep 0.05; done
  fail "sink did not start"
}

# all_writes SERVICE: bytes moved by the service's write-like calls so far.
all_writes() {
  jq_stat "$1" 'sum(v["bytes"] for k, v in d["total"]["calls"].items() if k in ("write", "send", "sendto", "sendmsg", "splice"))'
}
sample_w() { local t; t=$(now_ns); echo "$t $(all_writes "$1")"; }

# rate_over SERVICE SECS: the service's write rate over the next SECS seconds (B/s).
rate_over() {
  local a b
  a=$(sample_w "$1"); sleep "$2"; b=$(sample_w "$1")
  rate_between "$a" "$b"
}

# rates_over SECS: "RATE_A RATE_B" over the same SECS seconds.
rates_over() {
  local a1 b1 a2 b2
  a1=$(sample_w a); b1=$(sample_w b); sleep "$1"; a2=$(sample_w a); b2=$(sample_w b)
  echo "$(rate_between "$a1" "$a2") $(rate_between "$b1" "$b2")"
}

# ratio WHAT VALUE DIVISOR LO HI
ratio() { check_between "$1" "$(awk -v v="$2" -v d="$3" 'BEGIN { printf "%.3f", v / d }')" "$4" "$5"; }
