#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A slow-request flood against `bonsaictl serve` (t_ctl_serve_flood.sh, #36): opens
# COUNT connections to PORT from the source addresses 127.0.0.FIRST.. (PER_ADDR each),
# sends each a partial request, then trickles one header byte per connection every
# 2 s (an idle timeout alone does not drop them) until killed or SECONDS pass.
# Writes "open N" to READY_FILE once all are connected and again every 2 s (N: the
# connections the server has not closed). Optional 7th argument ADDR: connect from and
# to ADDR instead (a non-loopback address of this host).
import os, select, socket, sys, time

port, count, first, per_addr, ready, seconds = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                                int(sys.argv[4]), sys.argv[5], float(sys.argv[6]))
only = sys.argv[7] if len(sys.argv) > 7 else None
deadline = time.monotonic() + seconds
socks = []
for i in range(count):
    s = socket.socket()
    s.bind((only or "127.0.0.%d" % (first + i // per_addr), 0))
    s.settimeout(2)
    try:
        s.connect((only or "127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    except OSError:
        s.close()
        continue
    s.setblocking(False)
    socks.append(s)


def still_open():
    alive = []
    for s in socks:
        try:
            if s.recv(1, socket.MSG_PEEK) == b"":
                s.close()
                continue
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        alive.append(s)
    return alive


def report(n):
    with open(ready + ".tmp", "w") as f:
        f.write("open %d\n" % n)
    os.rename(ready + ".tmp", ready)


time.sleep(0.5)
socks = still_open()
report(len(socks))
while time.monotonic() < deadline:
    time.sleep(2)
    for s in socks:
        try:
            s.send(b"X")
        except OSError:
            pass
    socks = still_open()
    report(len(socks))
