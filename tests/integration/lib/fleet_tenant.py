# SPDX-License-Identifier: MIT
# A tenant of a fleet service, and the listener it points root's agent at
# (t_tenant_fleet.sh). Two roles:
#   listen PORT LOG SECS       accept on 127.0.0.1:PORT for SECS at most; LOG gets a line
#                              per connection ("connection N") and per read ("recv N
#                              BYTES"), each flushed at once (the test may kill it)
#   forge SEG OFFSETS SECS STORE PASSWORD_FILE
#                              rewrite SEG's fleet block (OFFSETS: fleet_offsets' words)
#                              every 20 ms for SECS: enabled 1, period 50 ms, the store,
#                              the password file, namespace "evil", caps of 1 TB/s,
#                              expected_hosts 1 -- what a process with the segment
#                              mapped read-write (a container's device) can do.
import mmap, os, select, socket, struct, sys, time

def listen(port, log, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    s.setblocking(False)
    conns, data, n = [], b"", 0
    end = time.time() + secs
    with open(log, "a") as out:
        out.write("listening\n"); out.flush()
        while time.time() < end:
            r, _, _ = select.select([s] + conns, [], [], 0.05)
            for c in r:
                if c is s:
                    conn, addr = s.accept()
                    conn.setblocking(False)
                    conns.append(conn)
                    n += 1
                    out.write("connection %d from %s\n" % (n, addr)); out.flush()
                    # Answer like a Redis that takes anything, so a client goes on to send.
                    try: conn.send(b"+OK\r\n")
                    except OSError: pass
                else:
                    try: got = c.recv(65536)
                    except OSError: got = b""
                    if not got:
                        conns.remove(c); c.close(); continue
                    data += got
                    out.write("recv %d %r\n" % (len(got), got[:2000])); out.flush()
                    try: c.send(b"+OK\r\n")
                    except OSError: pass

def forge(seg, offsets, secs, store, pwfile):
    off = dict(w.split("=") for w in offsets.split())
    off = {k: int(v) for k, v in off.items()}
    fd = os.open(seg, os.O_RDWR)
    m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    def put(name, raw, size):
        o = off[name]
        m[o:o + size] = raw[:size - 1].ljust(size, b"\0")
    end = time.time() + secs
    while time.time() < end:
        put("store", store.encode(), 128)
        put("password_file", pwfile.encode(), 128)
        put("namespace", b"evil", 64)
        m[off["enabled"]:off["enabled"] + 4] = struct.pack("<I", 1)
        m[off["period_ms"]:off["period_ms"] + 4] = struct.pack("<I", 50)
        m[off["expected_hosts"]:off["expected_hosts"] + 4] = struct.pack("<I", 1)
        for r in range(4):
            o = off["cap"] + 8 * r
            m[o:o + 8] = struct.pack("<Q", 10**12)
        time.sleep(0.02)
    m.close(); os.close(fd)

if sys.argv[1] == "listen":
    listen(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
else:
    forge(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6])
