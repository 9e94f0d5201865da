# SPDX-License-Identifier: MIT
# The isolation curve's arithmetic (bench/isolation_curve.sh): per run, A's and B's rate in
# every phase (A alone before and after, B at each cap) from their rate logs (fio bw logs
# or cotenant_stream logs: "unix ms at the end of a window, KiB/s"); then, over all runs,
# A's loss and (A + B) / A alone per variant, limiter and cap, bonsai and the kernel side
# by side, as isolation_curve.csv, a table, and the summary rows. Standard library only.
import argparse
import glob
import os
import sys

import cotenant_report  # the rate logs' parsing and integration (same directory)


def read_meta(run):
    meta, phases = {}, []
    with open(os.path.join(run, "meta.txt")) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key == "phase":  # phase=NAME,START_MS,END_MS,CAP_PCT,CAP_BPS,CONDITION
                name, start, end, pct, bps, cond = value.split(",")
                phases.append((name, int(start), int(end), pct, float(bps), cond))
            elif key:
                meta[key] = value
    return meta, phases


def cumulative(path, win_ms):
    """[(ms, bytes so far)] of one log; each point covers the win_ms before it."""
    return cotenant_report.cumulative(cotenant_report.read_log(path), win_ms)


def bytes_at(cum, t):
    """Bytes read by time t; past the end, all of them (the tenant had stopped)."""
    b = cotenant_report.bytes_at(cum, t)
    return cum[-1][1] if b is None else b


def rate(curves, start, end):
    """MB/s (10^6) of the sum of curves over [start, end] ms."""
    if end <= start or not curves:
        return float("nan")
    moved = sum(bytes_at(c, end) - bytes_at(c, start) for c in curves)
    return moved / 1e6 / ((end - start) / 1000.0)


def curves_of(run, prefix, win):
    return [c for c in (cumulative(p, win) for p in sorted(glob.glob(os.path.join(run, prefix + "_*.log")))) if c]


def run_rows(run):
    """{(cap_pct, condition): (A MB/s, B MB/s, seconds of A measured, cap B/s)} of one run.
    A's rate counts each phase after its first settle_ms, B's the whole phase (B is stopped
    outside its phases). From run/io.txt (bytes each process read, sampled at the phase
    boundaries) when present, else from the rate logs (socket readers)."""
    meta, phases = read_meta(run)
    win, settle = int(meta["win_ms"]), int(meta["settle_ms"])
    io_path = os.path.join(run, "io.txt")
    marks = {}
    if os.path.exists(io_path):
        with open(io_path) as f:
            for line in f:
                x = line.split()
                if len(x) >= 6:
                    marks[(int(x[0]), x[1])] = (int(x[2]) / 1000.0, [int(v) for v in x[3:6]])
        a_end = float("inf")
    else:
        a = curves_of(run, "A", win)
        if not a:
            sys.exit(f"isolation_curve: no rate log of A in {run}")
        a_end = min(c[-1][0] for c in a)
        b = {lim: curves_of(run, "B" + lim, win) for lim in ("bonsai", "kernel")}
    acc = {}
    for i, (name, start, end, pct, bps, cond) in enumerate(phases):
        e = acc.setdefault((pct, cond), {"a_bytes": 0.0, "a_ms": 0.0, "b_bytes": 0.0, "ms": 0.0, "bps": bps})
        if marks:
            m0, ms, m1 = marks.get((i, "start")), marks.get((i, "settle")), marks.get((i, "end"))
            if not (m0 and ms and m1):
                continue
            e["a_bytes"] += m1[1][0] - ms[1][0]
            e["a_ms"] += m1[0] - ms[0]
            if cond in ("bonsai", "kernel"):
                col = 1 if cond == "bonsai" else 2
                e["b_bytes"] += m1[1][col] - m0[1][col]
            e["ms"] += m1[0] - m0[0]
        else:
            lo, hi = start + settle, min(end, a_end)
            if hi <= lo:
                continue
            e["a_bytes"] += sum(bytes_at(c, hi) - bytes_at(c, lo) for c in a)
            e["a_ms"] += hi - lo
            if cond in b:
                e["b_bytes"] += sum(bytes_at(c, end) - bytes_at(c, start) for c in b[cond])
            e["ms"] += end - start
    rows = {}
    for (pct, cond), e in acc.items():
        if e["a_ms"] > 0 and e["ms"] > 0:
            rows[(pct, cond)] = (e["a_bytes"] / 1e6 / (e["a_ms"] / 1000.0), e["b_bytes"] / 1e6 / (e["ms"] / 1000.0),
                                 e["a_ms"] / 1000.0, e["bps"])
    return meta, rows


def fmt(v, spec=".1f"):
    return "nan" if v != v else format(v, spec)


def cmd_device(args):
    """D: what the three readers moved together in a probe run (all logged under A)."""
    _, rows = run_rows(args.run)
    print(fmt(next(iter(rows.values()))[0], ".1f"))


def cmd_report(args):
    skip = dict(s.split("=", 1) for s in args.skip)  # variant=reason the kernel did not run
    cols = ["variant", "b_cap_pct", "b_cap_mbps", "a_alone_mbps", "seconds_per_condition",
            "bonsai_a_mbps", "bonsai_b_mbps", "bonsai_a_loss_pct", "bonsai_a_plus_b_pct",
            "kernel_a_mbps", "kernel_b_mbps", "kernel_a_loss_pct", "kernel_a_plus_b_pct", "loss_diff_pp"]
    out, summary = [",".join(cols)], []
    print("\nIsolation curve: A's rate loss while B runs capped (B's cap in % of D, what A's and B's three")
    print(f"readers move together unthrottled); A+B in % of A alone. A alone, B under bonsai and B under the")
    print(f"kernel's throttle take turns ({args.cycles} cycle(s) per cap, phases rotated), so drift hits all alike.")
    print(f"{'variant':9} {'cap':>4} {'MB/s':>7} {'A alone':>8} | {'bonsai: loss':>12} {'A+B':>6} {'B MB/s':>7} | "
          f"{'kernel: loss':>12} {'A+B':>6} {'B MB/s':>7} | {'diff pp':>7}")
    for run in args.runs:
        meta, rows = run_rows(run)
        v = meta["variant"]
        pcts = sorted({p for p, _ in rows}, key=float)
        worst_diff, min_sum = float("nan"), float("nan")
        for p in pcts:
            al = rows.get((p, "alone"))
            if not al:
                continue
            solo = al[0]
            cells = [v, p, fmt(al[3] / 1e6, ".2f") if al[3] else fmt(float(meta["d_mbps"]) * float(p) / 100, ".2f"),
                     fmt(solo), fmt(al[2], ".1f")]
            vals = {}
            for lim in ("bonsai", "kernel"):
                r = rows.get((p, lim))
                if r:
                    loss, tot = 100.0 * (1 - r[0] / solo), 100.0 * (r[0] + r[1]) / solo
                    vals[lim] = (loss, tot, r[1])
                    cells += [fmt(r[0]), fmt(r[1]), fmt(loss, ".2f"), fmt(tot, ".2f")]
                    min_sum = tot if min_sum != min_sum else min(min_sum, tot)
                else:
                    cells += ["n/a: " + (skip.get(v) or "not run")] * 4
            diff = vals["bonsai"][0] - vals["kernel"][0] if len(vals) == 2 else float("nan")
            cells.append(fmt(diff, ".2f") if diff == diff else "n/a")
            if diff == diff:
                worst_diff = abs(diff) if worst_diff != worst_diff else max(worst_diff, abs(diff))
            out.append(",".join(c.replace(",", ";") for c in cells))
            show = lambda lim: (f"{vals[lim][0]:11.1f}% {vals[lim][1]:5.1f}% {vals[lim][2]:7.1f}" if lim in vals
                                else f"{'n/a':>12} {'':6} {'':7}")
            print(f"{v:9} {p + '%':>4} {cells[2]:>7} {solo:8.1f} | {show('bonsai')} | {show('kernel')} | "
                  f"{(f'{diff:+.1f}' if diff == diff else 'n/a'):>7}")
        summary.append((v, worst_diff, min_sum))
    with open(args.csv, "w") as f:
        f.write("\n".join(out) + "\n")
    for v, wd, ms in summary:
        print(f"summary {v} worst_diff_pp={fmt(wd, '.2f')} min_sum_pct={fmt(ms, '.1f')}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("device")
    d.add_argument("run")
    d.set_defaults(fn=cmd_device)
    r = sub.add_parser("report")
    r.add_argument("--csv", required=True)
    r.add_argument("--cycles", type=int, default=1)
    r.add_argument("--skip", action="append", default=[])
    r.add_argument("runs", nargs="+")
    r.set_defaults(fn=cmd_report)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
