#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Measures a simulated fleet's writes where they land (t_fleet_sentinel_failover.sh,
# bench/scenarios/fleet_failover.sh): each host's writer writes into its own FIFO, DIR/w1 ..
# DIR/wN, and this process reads them all and counts the bytes per host in time bins
# of the wall clock (time.time(), the clock `date +%s.%N` gives the shell), so that a
# hundred hosts cost one reader, not a hundred `bonsaictl stat` calls per sample.
#   meter DIR HOSTS SECS BIN OUT  -- reads for SECS at most (or until DIR/stop exists),
#                                   writes {"t0", "bin", "bytes": [[per host] per bin]} to OUT;
#   report OUT CAP KILL PROMOTE FROM TO PERIOD -- one JSON line over [FROM, TO] (unix s):
#       max_1s / min_1s: the aggregate's highest / lowest 1 s window (sliding by a bin) / CAP;
#       settle_1s: the windows starting 2 s after PROMOTE: mean, lowest, highest / CAP;
#       over_cs / under_cs: cap-seconds above / below the cap from 1 s before KILL to 4 s
#       after PROMOTE, summed over PERIOD-long bins; base_over_cs / base_under_cs: the same
#       over as long an interval before the kill (the measurement's own noise).
# Bounded: the read loop ends by its deadline.
import json, os, selectors, sys, time


def meter(d, hosts, secs, binw, out):
    sel = selectors.DefaultSelector()
    fds = []
    for h in range(hosts):
        # O_RDWR: the FIFO never reads as closed, before its writer opens it or after it exits.
        fd = os.open(os.path.join(d, "w%d" % (h + 1)), os.O_RDWR | os.O_NONBLOCK)
        fds.append(fd)
        sel.register(fd, selectors.EVENT_READ, h)
    t0 = time.time()
    rows = []
    deadline = t0 + secs
    stop = os.path.join(d, "stop")
    last_check = 0.0
    while True:
        now = time.time()
        if now >= deadline:
            break
        if now - last_check > 0.2:
            last_check = now
            if os.path.exists(stop):
                break
        for key, _ in sel.select(timeout=0.05):
            try:
                n = len(os.read(key.fd, 1 << 20))
            except BlockingIOError:
                continue
            i = int((time.time() - t0) / binw)
            while len(rows) <= i:
                rows.append([0] * hosts)
            rows[i][key.data] += n
    with open(out + ".tmp", "w") as f:
        json.dump({"t0": t0, "bin": binw, "bytes": rows}, f)
    os.rename(out + ".tmp", out)


def report(path, cap, kill, promote, frm, to, period):
    m = json.load(open(path))
    t0, binw, rows = m["t0"], m["bin"], m["bytes"]
    agg = [sum(r) for r in rows]

    def idx(t):
        return max(0, min(len(agg), int(round((t - t0) / binw))))

    def windows(a, b, secs):  # (start time, rate / cap) of every window in [a, b]
        n = int(round(secs / binw))
        out = []
        for i in range(idx(a), idx(b) - n + 1):
            out.append((t0 + i * binw, sum(agg[i:i + n]) / secs / cap))
        return out

    w = windows(frm, to, 1.0)
    settle = [r for (s, r) in w if s >= promote + 2.0]

    def cost(a, b):
        over = under = 0.0
        i, n = idx(a), max(1, int(round(period / binw)))
        while i + n <= idx(b):
            got = sum(agg[i:i + n]) / cap
            want = n * binw
            over += max(0.0, got - want)
            under += max(0.0, want - got)
            i += n
        return over, under

    a, b = kill - 1.0, promote + 4.0
    over, under = cost(a, b)
    bo, bu = cost(a - (b - a), a)
    print(json.dumps({
        "max_1s": round(max(r for _, r in w), 4), "min_1s": round(min(r for _, r in w), 4),
        "max_1s_at": round(max(w, key=lambda x: x[1])[0] - kill, 2),
        "settle_mean": round(sum(settle) / len(settle), 4) if settle else None,
        "settle_min": round(min(settle), 4) if settle else None,
        "settle_max": round(max(settle), 4) if settle else None,
        "promote_after_kill_s": round(promote - kill, 2),
        "over_cs": round(over, 3), "under_cs": round(under, 3),
        "base_over_cs": round(bo, 3), "base_under_cs": round(bu, 3), "cost_window_s": round(b - a, 2)}))


if __name__ == "__main__":
    if sys.argv[1] == "meter":
        meter(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    elif sys.argv[1] == "report":
        report(sys.argv[2], *[float(x) for x in sys.argv[3:9]])
    else:
        sys.exit("usage: fleet_meter.py meter DIR HOSTS SECS BIN OUT | report OUT CAP KILL PROMOTE FROM TO PERIOD")
