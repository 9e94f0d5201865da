#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork() in a multithreaded process while another thread waits in a throttled write():
# each child writes and exits promptly (no inherited lock), with counters of its own.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog fork_threads
out=$(limited 'write=1MiB/s' "$T/s.json" "$PRE/fork_threads" 5) || fail "fork_threads failed"
note "$out"
python3 - "$T/s.json" <<'PY' || fail "stats: want 5 children with exactly one 64 KiB write each"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
kids = [l for l in lines if l["calls"].get("write", {}).get("calls") == 1]
ok = len(kids) == 5 and all(k["calls"]["write"]["bytes"] == 65536 for k in kids)
sys.exit(0 if ok else 1)
PY
check_between "parent's run time with 5 forks (s)" "$(field "$out" secs)" 0.3 20  # TSan makes fork slow
