#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Scope service (issue 3): two dd processes attached to one service share one
# 4 MiB/s bucket in shared memory: together they hold the cap (within 10%), and
# each gets a fair part of it.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3

pids=
for i in 1 2; do
  "$CTL" run -s shared --scope service -l 'write=4MiB/s' -- dd if=/dev/zero of=/dev/null bs=4k count=1000000 status=none &
  pids="$pids $!"
done
cleanup_hooks+=("kill $pids 2>/dev/null")
wait_attached shared 2
sleep 0.5
a=$(sample shared write); sleep 2; b=$(sample shared write)
each=$("$CTL" stat shared --json | python3 -c '
import json, sys
d = json.loads(sys.stdin.readline())
print(" ".join(str(p["calls"]["write"]["bytes"]) for p in d["processes"]))')
kill $pids; wait 2>/dev/null
[ "$(jq_stat shared 'd["scope"]')" = service ] || fail "scope is not service"
check_rate "two processes, one cap" "$(rate_between "$a" "$b")" 1 $((4 * MiB)) 0.75 1.10
set -- $each
[ $# = 2 ] || fail "expected 2 processes, got: $each"
check_between "share of the first process" "$(awk -v x="$1" -v y="$2" 'BEGIN { printf "%.2f", x / (x + y) }')" 0.25 0.75
exit 0
