#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fleet caps (issue 37): four "hosts" (namespaces, an agent each) under one 8 MiB/s
# fleet cap through a private Redis. All busy: together they hold the cap and share it
# evenly; Redis serves about hosts / period lease calls a second; the store sees four
# live hosts (stat --fleet). Demand moved to one host: it gets nearly the whole cap
# within a second (a few periods). The agents never send their own clock (MONITOR).
# timeout: 40
. "$(dirname "$0")/lib/fleet_lib.sh"

fleet_setup 4 8 "1 2 3 4" 20

c0=$(evalsha_calls); s0=$(now_ns)
# The lease calls' arguments: none may be a clock reading (seconds, ms, us or ns since 1970).
rcli monitor > "$T/monitor" 2>/dev/null &
mon=$!
s=$(fleet_sample 4 3 0.5)
kill $mon 2>/dev/null; wait $mon 2>/dev/null
c1=$(evalsha_calls)
calls_per_s=$(awk -v a="$c0" -v b="$c1" -v s="$(secs_since "$s0")" 'BEGIN { printf "%.1f", (b - a) / s }')
check_rate "aggregate, 4 busy hosts" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.08
for h in 1 2 3 4; do
  check_between "host $h's share" "$(sample_eval "$s" "round(rate($h) / agg(), 3)")" 0.17 0.33
done
check_between "Redis lease calls/s (4 hosts / 0.25 s = 16)" "$calls_per_s" 11 20
grep -q EVALSHA "$T/monitor" || fail "MONITOR saw no EVALSHA"
python3 - "$T/monitor" <<'EOP' || fail "an agent sent a clock reading: $(grep EVALSHA "$T/monitor" | head -3)"
import re, sys, time
now = time.time()
for line in open(sys.argv[1], errors="replace"):
    if "EVALSHA" not in line: continue
    args = re.findall(r'"([^"]*)"', line.split("]", 1)[1])
    for a in args:
        if a.isdigit():
            v = int(a)
            for scale in (1, 1e3, 1e6, 1e9):
                if abs(v / scale - now) < 86400 * 365: sys.exit(1)
EOP

[ "$(fleet_field 1 'd["fleet"]["state"]')" = leased ] || fail "host 1: lease state $(fleet_field 1 'd["fleet"]')"
[ "$(fleet_field 1 'd["fleet"]["live_hosts"]')" = 4 ] || fail "host 1 sees $(fleet_field 1 'd["fleet"]["live_hosts"]') live hosts"
in_host 1 "$CTL" stat --fleet web --json > "$T/fleet.json" || fail "stat --fleet failed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert sorted(h["host"] for h in d["hosts"]) == ["h1","h2","h3","h4"], d' \
  "$T/fleet.json" || fail "stat --fleet: $(cat "$T/fleet.json")"
in_host 1 "$CTL" stat --prometheus | grep -q '^bonsai_fleet_lease_ok{service="web",host="h1"} 1' ||
  fail "no bonsai_fleet_lease_ok 1 in the Prometheus text"

# Demand moves to host 1: the idle hosts renew a small minimum, host 1 takes the rest.
for i in 2 3 4; do kill "${WRITER_PID[$i]}"; done
sleep 1
s=$(fleet_sample 4 2 0.5)
check_rate "host 1 alone" "$(sample_eval "$s" 'int(rate(1))')" 1 "$cap" 0.75 1.08
check_rate "aggregate, one busy host" "$(sample_eval "$s" 'int(agg())')" 1 "$cap" 0.75 1.08
exit 0
