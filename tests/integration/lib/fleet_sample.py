#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Samples the write bytes of service `web` on several fleet "hosts" (namespaces
# BASE h1. .. hN.) every STEP seconds for SECS seconds (fleet_lib.sh). Prints one JSON
# line: {"t": [seconds...], "bytes": [[host1, host2, ...] per sample]}.
# Usage: fleet_sample.py CTL BASE HOSTS SECS STEP
import json, os, subprocess, sys, time

ctl, base, hosts, secs, step = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])


def host_bytes(i):
    env = dict(os.environ, BONSAI_SHM_PREFIX=f"{base}h{i}.")
    try:
        out = subprocess.run([ctl, "stat", "web", "--json"], env=env, capture_output=True, text=True, timeout=5).stdout
        return json.loads(out.splitlines()[0])["total"]["calls"].get("write", {}).get("bytes", 0)
    except (IndexError, ValueError, KeyError, subprocess.TimeoutExpired):
        return 0


t0 = time.monotonic()
ts, rows = [], []
while True:
    now = time.monotonic() - t0
    ts.append(now)
    rows.append([host_bytes(i) for i in range(1, hosts + 1)])
    if now >= secs:
        break
    time.sleep(max(0.0, t0 + len(ts) * step - time.monotonic()))
print(json.dumps({"t": ts, "bytes": rows}))
