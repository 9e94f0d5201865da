#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Runs one command and appends "user_s sys_s wall_s" of that child (its own rusage,
# wait4) to OUTFILE; exits with the child's status. Used to measure the CPU a
# throttled process burns. Usage: cpu_run.py OUTFILE CMD [ARGS...]
import os
import sys
import time

if len(sys.argv) < 3:
    sys.stderr.write("usage: cpu_run.py OUTFILE CMD [ARGS...]\n")
    sys.exit(2)
out, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - start
with open(out, "a") as f:
    f.write(f"{ru.ru_utime:.4f} {ru.ru_stime:.4f} {wall:.4f}\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
