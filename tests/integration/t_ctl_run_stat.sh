#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsaictl run + stat --json (issue 3): a dd under `run -l write=2MiB/s` (4 s: long
# enough for python-driven polling on a loaded machine) is seen
# attached while it runs and folded into the exited totals after; its rate holds;
# the segment is mode 0600; stat names the library's version; a shell's forked children get slots of their own
# (a process attaches at its first interposed call).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3

timed dd "$CTL" run -s web -l 'write=2MiB/s' -- dd if=/dev/zero of=/dev/null bs=4k count=2048 status=none
wait_attached web 1
[ "$(stat -c %a "$(seg_file web)")" = 600 ] || fail "segment mode is $(stat -c %a "$(seg_file web)"), not 600"
sleep 0.5
running=$("$CTL" stat web --json)
version=$(cat "$(dirname "$0")/../../VERSION")
python3 - "$running" "$version" <<'PY' || fail "stat while running: $running"
import json, sys
d = json.loads(sys.argv[1])
assert d["processes"][0]["library_version"] == sys.argv[2], (d["processes"], sys.argv[2])
assert d["service"] == "web" and d["scope"] == "process", d
assert d["limits"] == ["write=2MiB/s"], d["limits"]
assert len(d["processes"]) == 1, d["processes"]
p = d["processes"][0]
assert p["comm"] == "dd" and p["limits_seq"] == d["limits_seq"], p
w = p["calls"]["write"]
assert 0 < w["bytes"] < 8 << 20 and w["calls"] > 0, w
assert set(w) >= {"calls", "bytes", "throttled", "wait_ns"}, w
PY
"$CTL" stat web | grep -q "^  library $version (1 process)\$" || fail "stat (table) has no library line: $("$CTL" stat web)"
wait
secs=$(timed_ok dd)
check_rate "dd under run" $((8 * MiB)) "$secs" $((2 * MiB))
after=$("$CTL" stat web --json)
python3 - "$after" <<'PY' || fail "stat after exit: $after"
import json, sys
d = json.loads(sys.argv[1])
assert d["processes"] == [], d["processes"]
assert d["exited"]["processes"] == 1, d["exited"]
w = d["total"]["calls"]["write"]
assert w["bytes"] == 8 << 20 and w["calls"] == 2048, w
assert w["throttled"] > 0 and w["wait_ns"] > 5e8, w
PY

# A shell forking two dd: each counted once, totals exact; the shell itself made no
# interposed call, so it never attached (docs/reference/limits.md "When a process joins
# its service"): two processes.
"$CTL" run -s forks -- sh -c 'dd if=/dev/zero of=/dev/null bs=4k count=100 status=none; dd if=/dev/zero of=/dev/null bs=4k count=300 status=none' ||
  fail "run sh failed"
forks=$("$CTL" stat forks --json)
python3 - "$forks" <<'PY' || fail "forked children: $forks"
import json, sys
d = json.loads(sys.argv[1])
assert d["processes"] == [], d["processes"]
assert d["exited"]["processes"] == 2, d["exited"]
assert d["total"]["calls"]["write"]["calls"] == 400, d["total"]
PY
"$CTL" ls | grep -q '^forks ' || fail "ls does not list forks"
"$CTL" rm web forks || fail "rm failed"
[ -e "$(seg_file web)" ] && fail "segment still there after rm"
exit 0
