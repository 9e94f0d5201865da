#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# set_churn.py CTL SERVICE CALL SECONDS HZ LIMIT [LIMIT...]: while the service runs under
# LIMIT (the first), applies a LIMIT HZ times a second for SECONDS (through one
# `CTL set --stdin SERVICE`, as a controller would: each change timed from its ack), cycling
# through the LIMITs from the second (from the first if there is one), and reads the
# service's CALL bytes (`CTL stat --json`) before and after. Prints "sets=N mean=M rate=R":
# the time-weighted mean of the limits in force (each from its set's return to the next
# one's) and the rate CALL moved at over the same window, in bytes/s. A support script of
# the live-change tests and bench/scenarios/ctl_churn.sh (not run by run.sh).
import json
import re
import subprocess
import sys
import time

UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def rate_of(limit):
    m = re.search(r"=([0-9.]+)([KMG]i?B|B)?/s", limit)
    return float(m.group(1)) * UNITS[m.group(2) or ""]


def bytes_of(ctl, service, call):
    out = subprocess.run([ctl, "stat", service, "--json"], capture_output=True, text=True, check=True).stdout
    d = json.loads(out.splitlines()[0])
    return d["total"]["calls"].get(call, {}).get("bytes", 0)


def main():
    ctl, service, call = sys.argv[1], sys.argv[2], sys.argv[3]
    seconds, hz = float(sys.argv[4]), float(sys.argv[5])
    limits = sys.argv[6:]
    cycle = limits[1:] + limits[:1] if len(limits) > 1 else limits
    period = 1.0 / hz
    setter = subprocess.Popen([ctl, "set", "--stdin", service], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1)
    b0 = bytes_of(ctl, service, call)
    start = time.monotonic()
    end = start + seconds
    spans = []  # (rate, from, to)
    cur_rate, cur_from = rate_of(limits[0]), start
    n = 0
    while time.monotonic() < end:
        limit = cycle[n % len(cycle)]
        setter.stdin.write(limit + "\n")
        setter.stdin.flush()
        if "limits #" not in setter.stdout.readline():
            sys.exit("set --stdin did not apply " + limit)
        now = time.monotonic()
        spans.append((cur_rate, cur_from, now))
        cur_rate, cur_from = rate_of(limit), now
        n += 1
        nxt = start + n * period
        if nxt > now:
            time.sleep(max(0.0, min(nxt, end) - now))
    t1 = time.monotonic()
    b1 = bytes_of(ctl, service, call)
    setter.stdin.close()
    if setter.wait() != 0:
        sys.exit("set --stdin failed")
    spans.append((cur_rate, cur_from, t1))
    total = t1 - start
    mean = sum(r * (b - a) for r, a, b in spans) / total
    print(f"sets={n} mean={mean:.0f} rate={(b1 - b0) / total:.0f}")


if __name__ == "__main__":
    main()
