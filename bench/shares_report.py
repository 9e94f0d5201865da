#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The shares bench's figures (bench/shares.sh): from each tenant's bytes per 5 ms bin,
# work conservation, isolation and the return from idle, against the targets of issue 38;
# rates per 50 ms for the plot. usage: shares_report.py RES CAP_MIB RATE_MIB THIRD_MS MS
import csv, sys

res, cap, rate, third, ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
MiB = 1048576
settle = 500  # ms left out after each change

def load(mode, t):
    with open(f"{res}/shares_{mode}_{t}.csv") as f:
        return {int(r["t_ms"]): int(r["bytes"]) for r in csv.DictReader(f)}

def rate_in(bins, a, b):  # bytes/s over [a, b) ms
    return sum(v for t, v in bins.items() if a <= t < b) / ((b - a) / 1000)

rows = [("mode", "metric", "value", "target", "verdict")]
plot = open(f"{res}/shares_plot.csv", "w")
plot.write("t_ms,shares_a,shares_b,hard_a,hard_b\n")
series = {}
for mode in ("shares", "hard"):
    a, b = load(mode, "a"), load(mode, "b")
    series[mode] = (a, b)
    ceil = cap if mode == "shares" else rate
    best = min(ceil, cap) * MiB
    wc_a = rate_in(a, settle, third) / best if mode == "shares" else rate_in(a, settle, third) / (cap * MiB)
    wc_b = rate_in(b, 2 * third + settle, ms) / (cap * MiB)
    iso_a = rate_in(a, third + settle, 2 * third) / (rate * MiB)
    iso_b = rate_in(b, third + settle, 2 * third) / (rate * MiB)
    back = rate_in(b, third, third + 20) / (rate * MiB)
    # the first 5 ms bin from which B's rate over the next 20 ms is >= 95% of its rate
    ramp = next((t - third for t in range(third, third + 500, 5) if rate_in(b, t, t + 20) >= 0.95 * rate * MiB), None)
    wc_target = ">= 0.95" if mode == "shares" else "0.5 (hard cap)"
    wc_ok = (lambda v: v >= 0.95) if mode == "shares" else (lambda v: abs(v - 0.5) < 0.05)
    rows += [
        (mode, "work conservation A alone / capacity", f"{wc_a:.3f}", wc_target, "pass" if wc_ok(wc_a) else "FAIL"),
        (mode, "work conservation B alone / capacity", f"{wc_b:.3f}", wc_target, "pass" if wc_ok(wc_b) else "FAIL"),
        (mode, "isolation A both busy / rate", f"{iso_a:.3f}", ">= 0.98", "pass" if iso_a >= 0.98 else "FAIL"),
        (mode, "isolation B both busy / rate", f"{iso_b:.3f}", ">= 0.98", "pass" if iso_b >= 0.98 else "FAIL"),
        (mode, "B back from idle, first 20 ms / rate", f"{back:.3f}", ">= 0.95", "pass" if back >= 0.95 else "FAIL"),
        (mode, "B back from idle, ms to 95% of rate (20 ms window)", "-" if ramp is None else str(ramp), "<= 20",
         "pass" if ramp is not None and ramp <= 20 else "FAIL"),
    ]
for t in range(0, ms, 50):
    vals = [rate_in(series[m][k], t, t + 50) / MiB for m in ("shares", "hard") for k in (0, 1)]
    plot.write(f"{t}," + ",".join(f"{v:.2f}" for v in vals) + "\n")
plot.close()
with open(f"{res}/shares.csv", "w", newline="") as f:
    csv.writer(f).writerows(rows)
w = max(len(r[1]) for r in rows)
for r in rows:
    print(f"{r[0]:<7} {r[1]:<{w}} {r[2]:>7} {r[3]:>15} {r[4]}")
