#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #16: a Python service's workers started with subprocess.run(env={...},
# close_fds=True), os.posix_spawn(path, argv, {}) and (root) subprocess.run(user=65534)
# stay in the service and hold its cap.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3 dd
cap=$((2 * MiB))
cat > "$T/svc.py" <<'PY'
import os, subprocess, sys, time
dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=48", "status=none"]
mode = sys.argv[1]
t = time.monotonic()
if mode == "subprocess":
    subprocess.run(dd, env={"PATH": "/usr/bin:/bin"}, close_fds=True, check=True)
elif mode == "posix_spawn":
    pid = os.posix_spawn("/bin/dd", dd, {})
    _, st = os.waitpid(pid, 0)
    assert st == 0, st
elif mode == "user":
    subprocess.run(dd, env={}, close_fds=True, user=65534, group=65534, extra_groups=[], check=True)
print("%.4f" % (time.monotonic() - t))
PY
modes="subprocess posix_spawn"
if nobody_loads_lib; then modes="$modes user"; else note "SKIP (not root, or nobody cannot read $LIB): subprocess.run(user=65534)"; fi
for scope in process service; do
  for mode in $modes; do
    secs=$("$CTL" run -s py --scope $scope -l 'write=2MiB/s' -- python3 "$T/svc.py" $mode) || fail "$mode failed"
    check_rate "python $mode, scope $scope" $((3 * MiB)) "$secs" $cap 0.5 1.02
  done
done
