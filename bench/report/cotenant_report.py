# SPDX-License-Identifier: MIT
# Turns the per-tenant rate logs of a co-tenant run pair (fio bw logs, or cotenant_stream's
# logs in the same format) into per-second MB/s of A and B, A's drop when B runs, a CSV,
# a side-by-side table, a verdict line and gnuplot variables. Standard library only.
import argparse
import glob
import json
import os
import sys

READ_CALLS = ("pread", "read", "preadv", "readv", "recv", "recvfrom", "recvmsg", "recvmmsg")


def load_meta(run_dir):
    meta = {}
    with open(os.path.join(run_dir, "meta.txt")) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key:
                meta[key] = value
    for key in ("t_a", "t_b", "b_start", "duration"):
        meta[key] = int(meta[key])
    meta["cap_mbps"] = float(meta.get("cap_mbps") or 0)
    return meta


def read_log(path):
    """(unix ms, KiB/s) points of one log; each rate is the mean over the time since the
    previous point (fio's log_avg_msec windows, which drift late when the host is busy)."""
    points = []
    with open(path) as f:
        for line in f:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) >= 2 and fields[0].isdigit():
                points.append((int(fields[0]), int(fields[1])))
    return points


def cumulative(points, win_ms=1000):
    """Breakpoints (ms, bytes so far) of one log; nothing was read before its first window
    (win_ms long). Also used by isolation_curve.py."""
    if not points:
        return []
    t_prev = points[0][0] - win_ms
    cum = [(t_prev, 0.0)]
    for t, kib_s in points:
        cum.append((t, cum[-1][1] + kib_s * 1024 * (t - t_prev) / 1000.0))
        t_prev = t
    return cum


def bytes_at(cum, t):
    """Bytes read by time t (linear within a window); None past the last point."""
    if t <= cum[0][0]:
        return 0.0
    for (t0, b0), (t1, b1) in zip(cum, cum[1:]):
        if t <= t1:
            return b0 + (b1 - b0) * (t - t0) / (t1 - t0) if t1 > t0 else b1
    return None


def tenant_rates(run_dir, tenant, t_a, duration):
    """Sums the tenant's logs into {second: MB/s}, second k covering (k-1, k] s after A's
    launch, re-binned from the logs' own windows; seconds not covered by every log are left out."""
    logs = sorted(glob.glob(os.path.join(run_dir, tenant + "_*.log")))
    curves = [c for c in (cumulative(read_log(p)) for p in logs) if c]
    if not curves:
        sys.exit(f"cotenant_report: no rate log for tenant {tenant} in {run_dir} (did it start?)")
    rates = {}
    for sec in range(1, duration + 1):
        lo, hi = t_a + (sec - 1) * 1000, t_a + sec * 1000
        if all(hi <= c[0][0] for c in curves):
            continue  # the tenant had not started yet
        total = 0.0
        for c in curves:
            b_lo, b_hi = bytes_at(c, lo), bytes_at(c, hi)
            if b_lo is None or b_hi is None:
                break
            total += b_hi - b_lo
        else:
            rates[sec] = total / 1e6
    return rates


def run_series(run_dir):
    meta = load_meta(run_dir)
    a = tenant_rates(run_dir, "A", meta["t_a"], meta["duration"])
    b = tenant_rates(run_dir, "B", meta["t_a"], meta["duration"])
    return meta, a, b


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def median(values):
    """Median of the seconds present: one second disturbed by a third party (other jobs on
    the host share the disk and CPUs) moves it less than it moves the mean."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return float("nan")
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def drop(meta, a):
    """A's median per-second rate alone (skipping its first second) and while B runs
    (skipping the second in which B starts); returns (solo, shared, drop in %)."""
    bs, d = meta["b_start"], meta["duration"]
    solo = median(a.get(s) for s in range(2, bs + 1))
    shared = median(a.get(s) for s in range(bs + 2, d + 1))
    return solo, shared, 100.0 * (1.0 - shared / solo)


def b_stats(run_dir):
    """Sums BONSAI_STATS lines of tenant B: (calls, bytes, throttled, wait_ns, call name)."""
    per_call = {}
    for path in glob.glob(os.path.join(run_dir, "stats.*.json")):
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                for name, c in json.loads(line)["calls"].items():
                    if name in READ_CALLS:
                        t = per_call.setdefault(name, [0, 0, 0, 0])
                        for i, key in enumerate(("calls", "bytes", "throttled", "wait_ns")):
                            t[i] += c[key]
    if not per_call:
        return None
    name = max(per_call, key=lambda n: per_call[n][1])
    return (*per_call[name], name)


def cmd_solo(args):
    meta, a, _ = run_series(args.run_dir)
    print(f"{drop(meta, a)[0]:.1f}")


def change(drop_pct):
    return f"drops {drop_pct:.1f}%" if drop_pct >= 0 else f"does not drop (rises {-drop_pct:.1f}%)"


def fmt(v):
    return f"{v:8.1f}" if v is not None else "       -"


def cmd_report(args):
    m0, a0, b0 = run_series(args.without)
    m1, a1, b1 = run_series(args.with_)
    d = max(m0["duration"], m1["duration"])
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    with open(args.csv, "w") as f:
        f.write("run,second,a_mbps,b_mbps,b_cap_mbps\n")
        for run, meta, a, b in (("without", m0, a0, b0), ("with", m1, a1, b1)):
            for s in range(1, d + 1):
                cell = lambda x: f"{x:.2f}" if x is not None else ""
                f.write(f"{run},{s},{cell(a.get(s))},{cell(b.get(s))},{meta['cap_mbps']:.2f}\n")
    print(f"\nPer-second MB/s (B starts at {m0['b_start']} s; {args.what}):")
    print("  sec |   without bonsai   |  B capped by bonsai")
    print("      |        A        B  |        A        B")
    for s in range(1, d + 1):
        mark = " <- B starts" if s == m0["b_start"] + 1 else ""
        print(f"  {s:3d} | {fmt(a0.get(s))} {fmt(b0.get(s))}  | {fmt(a1.get(s))} {fmt(b1.get(s))}{mark}")
    solo0, shared0, drop0 = drop(m0, a0)
    solo1, shared1, drop1 = drop(m1, a1)
    b_mean = mean(b1.get(s) for s in range(m1["b_start"] + 2, d + 1))
    cap = m1["cap_mbps"]
    ok0, ok1 = args.lo <= drop0 <= args.hi, drop1 <= args.target
    print()
    stats = b_stats(args.with_)
    if stats:
        calls, nbytes, throttled, wait_ns, name = stats
        print(f"bonsai's accounting of B (BONSAI_STATS): {name} {calls} calls, {nbytes / 1e6:.1f} MB, "
              f"{throttled} throttled, {wait_ns / 1e9:.1f} s waited")
    elif args.require_stats:
        sys.exit("cotenant_report: B wrote no BONSAI_STATS with read calls: B was NOT limited by bonsai")
    print(f"B's rate with bonsai: {b_mean:.1f} MB/s against a cap of {cap:.1f} MB/s "
          f"({100 * (b_mean / cap - 1):+.1f}%)" if cap else "")
    verdict = (f"verdict: when B starts, A's median rate {change(drop0)} without bonsai ({solo0:.0f} -> {shared0:.0f} MB/s) "
               f"and {change(drop1)} with B capped at {cap:.1f} MB/s ({solo1:.0f} -> {shared1:.0f} MB/s); "
               f"targets {args.lo:.0f}-{args.hi:.0f}% and <= {args.target:.0f}%: "
               f"{'met' if ok0 and ok1 else 'MISSED (' + ('without' if not ok0 else '') + (' with' if not ok1 else '') + ')'}")
    print(f"host load average (1 min) at the end of each run: {m0.get('loadavg', '?')} without, "
          f"{m1.get('loadavg', '?')} with bonsai ({os.cpu_count()} CPUs; other jobs add noise)")
    print(verdict)
    if args.plotvars:
        with open(args.plotvars, "w") as f:
            f.write(f'csv = "{os.path.abspath(args.csv)}"\n')
            f.write(f"bstart = {m0['b_start']}\nduration = {d}\ncap = {cap:.3f}\n")
            top = max([v for v in list(a0.values()) + list(a1.values()) + list(b0.values()) if v] + [1.0])
            f.write(f"ymax = {top * 1.4:.1f}\n")
            f.write(f'title_a = "(a) without bonsai: A {change(drop0)} when B\'s readers start"\n')
            f.write(f'title_b = "(b) B capped by bonsai at {cap:.1f} MB/s: A {change(drop1)}"\n')
            f.write(f'what = "{args.what}"\n')


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("solo", help="print A's solo MB/s of one run")
    s.add_argument("run_dir")
    s.set_defaults(fn=cmd_solo)
    r = sub.add_parser("report", help="table, verdict and CSV of a without/with pair")
    r.add_argument("--without", required=True)
    r.add_argument("--with", dest="with_", required=True)
    r.add_argument("--csv", required=True)
    r.add_argument("--plotvars")
    r.add_argument("--what", default="")
    r.add_argument("--lo", type=float, default=30.0)
    r.add_argument("--hi", type=float, default=60.0)
    r.add_argument("--target", type=float, default=5.0)
    r.add_argument("--require-stats", action="store_true")
    r.set_defaults(fn=cmd_report)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
