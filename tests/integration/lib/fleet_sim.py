#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Simulated fleet hosts calling the real lease script (issue 50): the Lua text is read
# from bonsaictl/fleet/fleet_script.cc, loaded with SCRIPT LOAD and called with EVALSHA
# over several real connections (raw RESP, Python stdlib only), each host once per
# period at its own phase, as the fleet agent calls it (ARGV: host, token, period,
# rules, then cap, want, used, repay). A busy host asks for the whole period's cap
# (what fleet_want asks when a host is held by its grant) and reports as used what it
# was granted last. Modes:
#   busy      -- every host calls each period for WARMUP + SECS seconds; prints JSON
#                with ratio = the fleet's use (each host at its last grant / period)
#                over the cap, averaged over the last SECS (ratio_min/max: its range;
#                grant_ratio: units granted / the cap's units), and redis_cpu = Redis's
#                CPU (cores, /proc/PID/stat) over the same window;
#   rounds    -- every host calls once as fast as the connections go (pipelined), ROUNDS
#                times, a period apart; prints JSON per round (grants, live, clashes).
# Bounded: every loop ends by its deadline; a connection that fails is an error.
import argparse, json, os, random, re, selectors, socket, sys, time


def lua_text(path):
    src = open(path).read()
    m = re.search(r'R"LUA\((.*?)\)LUA"', src, re.S)
    if not m:
        sys.exit("fleet_sim: no R\"LUA(...)LUA\" in " + path)
    return m.group(1)


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Parser:
    """Incremental RESP2 parser: feed bytes, take complete replies."""

    def __init__(self):
        self.buf = b""
        self.pos = 0

    def feed(self, data):
        if self.pos:
            self.buf = self.buf[self.pos:]
            self.pos = 0
        self.buf += data

    def _line(self, i):
        j = self.buf.find(b"\r\n", i)
        if j < 0:
            raise IndexError
        return self.buf[i:j], j + 2

    def _one(self, i):
        line, i = self._line(i)
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode(), i
        if t == b"-":
            return RuntimeError(rest.decode()), i
        if t == b":":
            return int(rest), i
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None, i
            if len(self.buf) < i + n + 2:
                raise IndexError
            return self.buf[i:i + n], i + n + 2
        if t == b"*":
            n = int(rest)
            out = []
            for _ in range(max(n, 0)):
                v, i = self._one(i)
                out.append(v)
            return out, i
        raise ValueError("bad RESP: %r" % line[:40])

    def take(self):
        try:
            v, i = self._one(self.pos)
        except IndexError:
            return False, None
        self.pos = i
        return True, v


class Conn:
    def __init__(self, port, user=None, password=None):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.p = Parser()
        if password:
            self.call(*(["AUTH", user, password] if user else ["AUTH", password]))
        self.out = b""
        self.inflight = []  # host indexes, in the order of the requests

    def call(self, *args):  # blocking, before the loop
        self.s.sendall(resp(*args))
        while True:
            ok, v = self.p.take()
            if ok:
                if isinstance(v, RuntimeError):
                    raise v
                return v
            data = self.s.recv(65536)
            if not data:
                raise RuntimeError("connection closed")
            self.p.feed(data)


def cpu_ticks(pid):
    if not pid:
        return 0
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--script", required=True)
    ap.add_argument("--prefix", default="bonsai:fleet:sim:{web}:")
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--period-ms", type=int, default=1000)
    ap.add_argument("--cap", type=int, default=100 * 2**20, help="units/s, fleet-wide")
    ap.add_argument("--mode", choices=["busy", "rounds"], default="busy")
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--secs", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--last-gap", type=float, default=0,
                    help="periods of quiet before the last round (the fleet clock refills: a steady period)")
    ap.add_argument("--small", type=int, default=0, help="this many hosts want only --small-want")
    ap.add_argument("--small-want", type=int, default=1000)
    ap.add_argument("--redis-pid", type=int, default=0)
    ap.add_argument("--user")
    ap.add_argument("--password-file")
    ap.add_argument("--legacy", action="store_true", help="--script is the issue-37 script (for comparison)")
    a = ap.parse_args()

    pw = open(a.password_file).readline().strip() if a.password_file else None
    conns = [Conn(a.port, a.user, pw) for _ in range(a.conns)]
    sha = conns[0].call("SCRIPT", "LOAD", lua_text(a.script)).decode()
    period_us = a.period_ms * 1000
    cap_period = a.cap * a.period_ms // 1000
    ids = [b"sim-%06d" % i for i in range(a.hosts)]
    tokens = [b"%016x" % random.getrandbits(64) for _ in range(a.hosts)]
    last_grant = [0] * a.hosts
    want = [a.small_want if i < a.small else cap_period for i in range(a.hosts)]

    def request(i):
        if a.legacy:  # the issue-37 script (no token; reply: live, then per rule granted, used)
            return resp("EVALSHA", sha, 1, a.prefix, ids[i], period_us, 1, a.cap, want[i], last_grant[i], 0)
        return resp("EVALSHA", sha, 1, a.prefix, ids[i], tokens[i], period_us, 1, a.cap, want[i], last_grant[i], 0)

    held = [0]  # the sum of every host's last grant: the fleet's rate is held / period
    sel = selectors.DefaultSelector()
    for c in conns:
        c.s.setblocking(False)
        sel.register(c.s, selectors.EVENT_READ, c)
    stats = {"errors": 0, "first_error": "", "calls": 0, "live_max": 0, "clash": 0}

    def pump(deadline, on_reply, more):
        """Sends what is queued, reads replies, until nothing is in flight and more() is
        False, or the deadline."""
        while time.monotonic() < deadline:
            more()
            busy = False
            for c in conns:
                if c.out:
                    try:
                        n = c.s.send(c.out)
                        c.out = c.out[n:]
                    except BlockingIOError:
                        pass
                busy = busy or c.out or c.inflight
            if not busy and not more(check=True):
                return True
            for key, _ in sel.select(timeout=0.005):
                c = key.data
                try:
                    data = c.s.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not data:
                    sys.exit("fleet_sim: Redis closed a connection")
                c.p.feed(data)
                while True:
                    ok, v = c.p.take()
                    if not ok:
                        break
                    i = c.inflight.pop(0)
                    stats["calls"] += 1
                    if isinstance(v, list) and a.legacy and len(v) == 3:
                        v = [v[0], 0] + v[1:]
                    if isinstance(v, RuntimeError) or not isinstance(v, list) or len(v) != 4:
                        stats["errors"] += 1
                        stats["first_error"] = stats["first_error"] or str(v)[:200]
                        continue
                    stats["live_max"] = max(stats["live_max"], v[0])
                    stats["clash"] += v[1]
                    held[0] += v[2] - last_grant[i]
                    last_grant[i] = v[2]
                    on_reply(i, v)
        return False

    def send(i):
        c = conns[i % len(conns)]
        c.out += request(i)
        c.inflight.append(i)

    if a.mode == "rounds":
        out = []
        for r in range(a.rounds):
            start = time.monotonic()
            got = {"grants": 0, "small_grants": 0, "big_grants": 0, "live": 0, "big_min": None, "big_max": 0}
            todo = list(range(a.hosts))

            def more(check=False):
                if check:
                    return bool(todo)
                while todo and sum(len(c.inflight) for c in conns) < 20000:
                    send(todo.pop())
                return bool(todo)

            def on_reply(i, v):
                got["grants"] += v[2]
                got["live"] = v[0]
                if i < a.small:
                    got["small_grants"] += v[2]
                else:
                    got["big_grants"] += v[2]
                    got["big_min"] = v[2] if got["big_min"] is None else min(got["big_min"], v[2])
                    got["big_max"] = max(got["big_max"], v[2])

            if not pump(start + 60, on_reply, more):
                sys.exit("fleet_sim: round %d did not finish within 60 s" % r)
            got["secs"] = round(time.monotonic() - start, 3)
            out.append(got)
            if r + 1 < a.rounds:
                gap = 1.05 + (a.last_gap if r + 2 == a.rounds else 0)
                time.sleep(max(0.0, start + a.period_ms / 1000 * gap - time.monotonic()))
        print(json.dumps({"hosts": a.hosts, "cap_period": cap_period, "rounds": out, **stats}))
        return

    # busy: each host at its own phase of the period.
    t0 = time.monotonic()
    due = [t0 + random.random() * a.period_ms / 1000 for _ in range(a.hosts)]
    order = sorted(range(a.hosts), key=lambda i: due[i])
    win = {"start": t0 + a.warmup, "end": t0 + a.warmup + a.secs, "granted": 0, "lag_max": 0.0, "cpu0": None,
           "held": [], "next_sample": 0.0}
    nxt = [0]  # position in `order` of the next due host (a ring: each host due once per period)
    per = a.period_ms / 1000

    def more(check=False):
        now = time.monotonic()
        if check:
            return now < win["end"]
        if win["cpu0"] is None and now >= win["start"]:
            win["cpu0"] = (cpu_ticks(a.redis_pid), now)
        while now < win["end"]:
            i = order[nxt[0]]
            if due[i] > now:
                break
            win["lag_max"] = max(win["lag_max"], now - due[i]) if now > win["start"] else win["lag_max"]
            due[i] += per
            nxt[0] = (nxt[0] + 1) % a.hosts
            send(i)
        return now < win["end"]

    def on_reply(i, v):
        now = time.monotonic()
        if win["start"] <= now < win["end"]:
            win["granted"] += v[2]
            if now >= win["next_sample"]:  # the fleet's use: each busy host runs at its grant / period
                win["held"].append(held[0])
                win["next_sample"] = now + 0.05

    pump(win["end"] + 10, on_reply, more)
    t1 = time.monotonic()
    cpu1 = cpu_ticks(a.redis_pid)
    cpu0, tc0 = win["cpu0"] or (cpu1, t1)
    secs = win["end"] - win["start"]
    # ratio: the fleet's use (every host at its last grant / period), averaged over the
    # window, over the cap; grant_ratio: the units granted in the window over the cap's
    # (lower when calls bunch: the GCRA does not carry unused time forward).
    ratio = sum(win["held"]) / max(len(win["held"]), 1) / cap_period
    grant_ratio = win["granted"] / (a.cap * secs)
    cores = (cpu1 - cpu0) / os.sysconf("SC_CLK_TCK") / max(t1 - tc0, 1e-9)
    print(json.dumps({"hosts": a.hosts, "period_ms": a.period_ms, "secs": secs, "ratio": round(ratio, 4),
                      "grant_ratio": round(grant_ratio, 4), "ratio_min": round(min(win["held"] or [0]) / cap_period, 4),
                      "ratio_max": round(max(win["held"] or [0]) / cap_period, 4),
                      "redis_cpu": round(cores, 3), "calls_per_s": round(stats["calls"] / (t1 - t0), 1),
                      "lag_max_s": round(win["lag_max"], 3), **stats}))


if __name__ == "__main__":
    main()
