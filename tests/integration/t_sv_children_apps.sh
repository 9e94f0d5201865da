#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Static and Go children of real services (issue #40): node's child_process starting
# busybox (static) and a Go program; Python's subprocess starting Debian's rclone (Go,
# dynamically linked: told by its build-id note) for a `copyto`. Each holds the
# service's cap; so does busybox started after a uid drop (setpriv). Cases whose
# program is missing are skipped (make deps installs busybox-static, rclone and nodejs).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3
CAP=$((2 * MiB))
head -c $((3 * MiB)) /dev/urandom > "$T/in"
BB=$(command -v busybox || true)
if [ -n "$BB" ] && ! file -L "$BB" 2>/dev/null | grep -q 'statically linked'; then BB=; fi
ran=0

# node_child PROG ARGS...: node spawns PROG (spawnSync) and prints "secs=S status=N".
node_child() {
  node -e '
    const t = Date.now();
    const r = require("child_process").spawnSync(process.argv[1], process.argv.slice(2), {stdio: ["ignore", "ignore", "inherit"]});
    console.log("secs=" + (Date.now() - t) / 1000 + " status=" + r.status);' "$@"
}

if command -v node > /dev/null && [ -n "$BB" ]; then
  export -f node_child
  out=$("$CTL" run -s n -l "reads=${CAP}B/s" -- bash -c 'node_child "$@"' _ "$BB" cat "$T/in" 2> "$T/n.err") ||
    fail "node: $(cat "$T/n.err")"
  [ "$(field "$out" status)" = 0 ] || fail "node's busybox child: $out $(cat "$T/n.err")"
  check_rate "busybox cat started by node, reads cap 2 MiB/s" $((3 * MiB)) "$(field "$out" secs)" $CAP
  ran=$((ran + 1))
fi
if command -v rclone > /dev/null; then
  out=$("$CTL" run -s r -l "writes=${CAP}B/s" -- python3 -c '
import subprocess, sys, time
t = time.time()
r = subprocess.run(["rclone", "copyto", sys.argv[1], sys.argv[2], "--config", "/dev/null"])
print("secs=%.3f status=%d" % (time.time() - t, r.returncode))' "$T/in" "$T/out" 2> "$T/r.err") || fail "rclone: $(cat "$T/r.err")"
  [ "$(field "$out" status)" = 0 ] || fail "rclone copyto: $out $(cat "$T/r.err")"
  cmp -s "$T/in" "$T/out" || fail "rclone's copy differs"
  said "$T/r.err" | grep -q 'WITHOUT LIMITS\|NOT limited' && fail "rclone ran unlimited: $(cat "$T/r.err")"
  # rclone's own start (~0.1 s) is in the time: the floor stays the suite's 0.75
  check_rate "rclone copyto started by python3, writes cap 2 MiB/s" $((3 * MiB)) "$(field "$out" secs)" $CAP
  ran=$((ran + 1))
fi
# A child that dropped privileges first (setpriv as nobody, then busybox): the trampoline
# reaches the segment through the descriptor the library hands down; the static
# program does not inherit that descriptor.
if [ -n "$BB" ] && nobody_loads_lib && command -v setpriv > /dev/null; then
  chmod 755 "$T"
  chmod 644 "$T/in"
  t0=$(now_ns)
  out=$("$CTL" run -s u -l "reads=${CAP}B/s" -- setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$BB" sh -c "$BB cat $T/in > /dev/null; $BB ls -l /proc/self/fd | $BB grep -c /dev/shm" 2> "$T/u.err") || true
  secs=$(secs_since "$t0")
  [ "$out" = 0 ] || fail "after a uid drop: the segment descriptor reached the program, or it failed: $out $(cat "$T/u.err")"
  said "$T/u.err" | grep -q 'WITHOUT LIMITS\|NOT limited' && fail "after a uid drop: unlimited: $(cat "$T/u.err")"
  check_rate "busybox cat after a uid drop, reads cap 2 MiB/s" $((3 * MiB)) "$secs" $CAP
  ran=$((ran + 1))
fi
[ "$ran" -gt 0 ] || skip "neither node with a static busybox nor rclone is installed"
exit 0
