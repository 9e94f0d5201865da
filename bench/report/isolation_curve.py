# SPDX-License-Identifier: MIT
# The isolation curve's arithmetic (bench/scenarios/isolation_curve.sh): per run, A's and B's rate in
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


def phase_rates(run):
    """[(cap_pct, cycle, condition, A MB/s, B MB/s, seconds measured, seconds, cap B/s)] per phase
    of one run. Both rates count each phase after its first settle_ms: the steady state, not
    the start of B's phase (B continued after a stop begins with its bucket's depth, bonsai's
    or the kernel slice's). From run/io.txt (bytes each process read, sampled at the
    phase boundaries) when present, else from the rate logs (socket readers). The cycle is
    the phase name's "CAP_INDEX.CYCLE" (the probe's single phase: "all")."""
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
    out = []
    for i, (name, start, end, pct, bps, cond) in enumerate(phases):
        if marks:
            m0, ms, m1 = marks.get((i, "start")), marks.get((i, "settle")), marks.get((i, "end"))
            if not (m0 and ms and m1):
                continue
            col = {"bonsai": 1, "kernel": 2}.get(cond)
            # A counter unread at a mark (-1) or going backwards: the phase is left out.
            if min(ms[1][0], m1[1][0] - ms[1][0]) < 0 or (col and min(ms[1][col], m1[1][col] - ms[1][col]) < 0):
                continue
            a_bytes, a_ms, b_bytes, ph_ms = m1[1][0] - ms[1][0], m1[0] - ms[0], 0.0, m1[0] - m0[0]
            if col:
                b_bytes = m1[1][col] - ms[1][col]
        else:
            lo, hi = start + settle, min(end, a_end)
            if hi <= lo:
                continue
            a_bytes = sum(bytes_at(c, hi) - bytes_at(c, lo) for c in a)
            a_ms, ph_ms, b_bytes = hi - lo, end - start, 0.0
            if cond in b:
                b_bytes = sum(bytes_at(c, hi) - bytes_at(c, lo) for c in b[cond])
        if a_ms > 0 and ph_ms > 0:
            out.append((pct, name, cond, a_bytes / 1e3 / a_ms, b_bytes / 1e3 / a_ms, a_ms / 1000.0,
                        ph_ms / 1000.0, bps))
    return meta, out


def run_rows(run):
    """{(cap_pct, condition): (A MB/s, B MB/s, seconds of A measured, cap B/s)} of one run (rates
    over all its phases of that cap and condition), and {(cap_pct, condition): [(A's loss %,
    (A + B) in % of A alone)] per cycle}, each against the same cycle's "A alone" phase: paired,
    so the device's drift between cycles cancels out of the differences."""
    meta, phases = phase_rates(run)
    acc, cycles = {}, {}
    for pct, cyc, cond, a, b, a_s, s, bps in phases:
        e = acc.setdefault((pct, cond), {"a_bytes": 0.0, "a_s": 0.0, "b_bytes": 0.0, "s": 0.0, "bps": bps})
        e["a_bytes"] += a * a_s
        e["a_s"] += a_s
        e["b_bytes"] += b * a_s
        e["s"] += a_s
        cycles.setdefault((pct, cyc), {})[cond] = (a, b)
    rows = {k: (e["a_bytes"] / e["a_s"], e["b_bytes"] / e["s"], e["a_s"], e["bps"]) for k, e in acc.items()}
    paired = {}
    for (pct, _), by in cycles.items():
        alone = by.get("alone")
        if not alone or alone[0] <= 0:
            continue
        for cond, (a, b) in by.items():
            if cond != "alone":
                paired.setdefault((pct, cond), []).append((100.0 * (1 - a / alone[0]),
                                                           100.0 * (a + b) / alone[0]))
    return meta, rows, paired


# Student's t, two-sided 95%, by degrees of freedom (1..30); above: 1.96.
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14, 2.13,
       2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05, 2.05, 2.04]


def mean_ci(xs):
    """(mean, half-width of its 95% confidence interval; nan with fewer than 2 values)."""
    n = len(xs)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(xs) / n
    if n < 2:
        return m, float("nan")
    sd = (sum((x - m) ** 2 for x in xs) / (n - 1)) ** 0.5
    return m, (T95[n - 2] if n - 1 <= len(T95) else 1.96) * sd / n ** 0.5


def fmt(v, spec=".1f"):
    return "nan" if v != v else format(v, spec)


def cmd_device(args):
    """D: what the three readers moved together in a probe run (all logged under A)."""
    _, rows, _ = run_rows(args.run)
    print(fmt(next(iter(rows.values()))[0], ".1f"))


def cmd_report(args):
    skip = dict(s.split("=", 1) for s in args.skip)  # variant=reason the kernel did not run
    cols = ["variant", "b_cap_pct", "b_cap_mbps", "a_alone_mbps", "seconds_per_condition",
            "bonsai_a_mbps", "bonsai_b_mbps", "bonsai_a_loss_pct", "bonsai_a_plus_b_pct",
            "kernel_a_mbps", "kernel_b_mbps", "kernel_a_loss_pct", "kernel_a_plus_b_pct", "loss_diff_pp",
            "loss_diff_ci95_pp", "cycles", "bonsai_a_loss_ci95_pp", "kernel_a_loss_ci95_pp"]
    out, summary = [",".join(cols)], []
    print("\nIsolation curve: A's rate loss while B runs capped (B's cap in % of D, what A's and B's three")
    print("readers move together unthrottled); A+B in % of A alone. A alone, B under bonsai and B under the")
    print(f"kernel's throttle take turns ({args.cycles} cycle(s) per cap, phases rotated); loss, A+B and the")
    print("difference are means over cycles of each cycle against its own \"A alone\" phase, +- the half-width")
    print("of their 95% confidence interval (none with one cycle). diff: bonsai's loss - the kernel's.")
    print(f"{'variant':9} {'cap':>4} {'MB/s':>7} {'A alone':>8} | {'bonsai: loss':>17} {'A+B':>6} {'B MB/s':>7} | "
          f"{'kernel: loss':>17} {'A+B':>6} {'B MB/s':>7} | {'diff pp':>12}")
    for run in args.runs:
        meta, rows, paired = run_rows(run)
        v = meta["variant"]
        pcts = sorted({p for p, _ in rows}, key=float)
        worst, best, min_sum = None, None, float("nan")
        for p in pcts:
            al = rows.get((p, "alone"))
            if not al:
                continue
            solo = al[0]
            cells = [v, p, fmt(al[3] / 1e6, ".2f") if al[3] else fmt(float(meta["d_mbps"]) * float(p) / 100, ".2f"),
                     fmt(solo), fmt(al[2], ".1f")]
            vals, cis = {}, {}
            for lim in ("bonsai", "kernel"):
                r, pc = rows.get((p, lim)), paired.get((p, lim), [])
                if r and pc:
                    (loss, ci), tot = mean_ci([x[0] for x in pc]), sum(x[1] for x in pc) / len(pc)
                    vals[lim], cis[lim] = (loss, tot, r[1]), ci
                    cells += [fmt(r[0]), fmt(r[1]), fmt(loss, ".2f"), fmt(tot, ".2f")]
                    min_sum = tot if min_sum != min_sum else min(min_sum, tot)
                else:
                    cells += ["n/a: " + (skip.get(v) or "not run")] * 4
            diff, dci, n = float("nan"), float("nan"), len(paired.get((p, "bonsai"), []))
            if len(vals) == 2:
                # Per cycle: both losses against the same "A alone" phase.
                pb, pk = paired[(p, "bonsai")], paired[(p, "kernel")]
                diff, dci = mean_ci([x[0] - y[0] for x, y in zip(pb, pk)])
                worst = (diff, dci, p) if worst is None or diff > worst[0] else worst
                best = (diff, dci, p) if best is None or diff < best[0] else best
            cells += [fmt(diff, ".2f") if diff == diff else "n/a", fmt(dci, ".2f") if dci == dci else "n/a", str(n),
                      fmt(cis.get("bonsai", float("nan")), ".2f"), fmt(cis.get("kernel", float("nan")), ".2f")]
            out.append(",".join(c.replace(",", ";") for c in cells))
            pm = lambda m, c: f"{m:.1f}" + (f"+-{c:.1f}" if c == c else "")
            show = lambda lim: (f"{pm(vals[lim][0], cis[lim]) + '%':>17} {vals[lim][1]:5.1f}% {vals[lim][2]:7.1f}"
                                if lim in vals else f"{'n/a':>17} {'':6} {'':7}")
            print(f"{v:9} {p + '%':>4} {cells[2]:>7} {solo:8.1f} | {show('bonsai')} | {show('kernel')} | "
                  f"{(pm(diff, dci) if diff == diff else 'n/a'):>12}")
        summary.append((v, worst, best, min_sum))
    with open(args.csv, "w") as f:
        f.write("\n".join(out) + "\n")
    for v, worst, best, ms in summary:
        w = worst or (float("nan"), float("nan"), "-")
        bb = best or (float("nan"), float("nan"), "-")
        print(f"summary {v} worst_diff_pp={fmt(w[0], '.2f')} worst_ci_pp={fmt(w[1], '.2f')} worst_cap={w[2]} "
              f"best_diff_pp={fmt(bb[0], '.2f')} best_cap={bb[2]} min_sum_pct={fmt(ms, '.1f')}")


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
