#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The shares bench's figures (bench/scenarios/shares.sh): from each tenant's bytes per 5 ms bin,
# work conservation, isolation and the return from idle, against the targets of issue 38;
# rates per 50 ms for the plot. usage: shares_report.py RES CAP_MIB RATE_A_MIB RATE_B_MIB THIRD_MS MS
import csv, sys

res, cap, rate_a, rate_b, third, ms = sys.argv[1], *map(int, sys.argv[2:7])
MiB = 1048576
settle = 500  # ms left out after each change

def load(mode, t):
    with open(f"{res}/shares_{mode}_{t}.csv") as f:
        return {int(r["t_ms"]): int(r["bytes"]) for r in csv.DictReader(f)}

def rate_in(bins, a, b):  # bytes/s over [a, b) ms
    return sum(v for t, v in bins.items() if a <= t < b) / ((b - a) / 1000)

rows = [("mode", "metric", "value", "target", "verdict")]
verdict = lambda ok, v: "-" if ok is None else "pass" if ok(v) else "FAIL"  # "-": information only
series = {}
MODES = sys.argv[7].split(",") if len(sys.argv) > 7 else ["shares", "hard"]
suffix = "" if len(sys.argv) <= 7 else "_" + "_".join(MODES)  # shares.csv, or shares_htb.csv
for mode in MODES:
    a, b = load(mode, "a"), load(mode, "b")
    series[mode] = (a, b)
    # work conservation: a tenant alone / min(ceil, capacity); the ceilings are the capacity
    # under shares, so both modes divide by it (a hard cap's share is its rate / capacity)
    wc_a = rate_in(a, settle, third) / (cap * MiB)
    wc_b = rate_in(b, 2 * third + settle, ms) / (cap * MiB)
    iso_a = rate_in(a, third + settle, 2 * third) / (rate_a * MiB)
    iso_b = rate_in(b, third + settle, 2 * third) / (rate_b * MiB)
    back = rate_in(b, third, third + 20) / (rate_b * MiB)
    # the first 5 ms bin from which B's rate over the next 20 ms is >= 95% of its rate
    ramp = next((t - third for t in range(third, third + 500, 5) if rate_in(b, t, t + 20) >= 0.95 * rate_b * MiB), None)
    wc_target = ">= 0.95" if mode in ("shares", "htb") else "rate/capacity"
    wc_ok = (lambda v: v >= 0.95) if mode in ("shares", "htb") else None
    rows += [
        (mode, "work conservation A alone / capacity", f"{wc_a:.3f}", wc_target, verdict(wc_ok, wc_a)),
        (mode, "work conservation B alone / capacity", f"{wc_b:.3f}", wc_target, verdict(wc_ok, wc_b)),
        (mode, "both busy: A + B / capacity", f"{(rate_in(a, third + settle, 2 * third) + rate_in(b, third + settle, 2 * third)) / (cap * MiB):.3f}",
         ">= 0.95" if mode in ("shares", "htb") else "rates/capacity", "-"),
        (mode, "isolation A both busy / rate", f"{iso_a:.3f}", ">= 0.98", "pass" if iso_a >= 0.98 else "FAIL"),
        (mode, "isolation B both busy / rate", f"{iso_b:.3f}", ">= 0.98", "pass" if iso_b >= 0.98 else "FAIL"),
        (mode, "B back from idle, first 20 ms / rate", f"{back:.3f}", ">= 0.95", "pass" if back >= 0.95 else "FAIL"),
        (mode, "B back from idle, ms to 95% of rate (20 ms window)", "-" if ramp is None else str(ramp), "<= 20",
         "pass" if ramp is not None and ramp <= 20 else "FAIL"),
    ]
if not suffix:
    with open(f"{res}/shares_plot.csv", "w") as plot:
        plot.write("t_ms,shares_a,shares_b,hard_a,hard_b\n")
        for t in range(0, ms, 50):
            vals = [rate_in(series[m][k], t, t + 50) / MiB for m in ("shares", "hard") for k in (0, 1)]
            plot.write(f"{t}," + ",".join(f"{v:.2f}" for v in vals) + "\n")
with open(f"{res}/shares{suffix}.csv", "w", newline="") as f:
    csv.writer(f).writerows(rows)
w = max(len(r[1]) for r in rows)
for r in rows:
    print(f"{r[0]:<7} {r[1]:<{w}} {r[2]:>7} {r[3]:>15} {r[4]}")
