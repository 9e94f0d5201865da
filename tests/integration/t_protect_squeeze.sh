#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# protect: (issue 52) end to end, with a latency the test controls: the protected
# service's dd reads a pipe fed one byte every 2 ms, so the library times its reads at
# ~2 ms against a 1 ms target; protect-agent squeezes `batch` (a dd reading /dev/zero
# under reads=40MiB/s) to its floor (4MiB/s) through the live limits path, stat shows
# the target, the p99 and the decision; once the feed stops (db idle) batch is given
# its 40MiB/s back within a few periods. `load` starts the agent, once.
# timeout: 45
# parallel: no (its controller decides from the p99 of db's reads in 250 ms periods: in loaded lanes db went unsampled)
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3
cat > "$T/p.yaml" <<'YAML'
version: 1
services:
  db:
    protect: {calls: [read], p99: 1ms, squeeze: [batch]}
  batch:
    scope: service
    limits:
      - {calls: [reads], rate: 40MiB/s, floor: 4MiB/s}
YAML
"$CTL" check "$T/p.yaml" > /dev/null || fail "check: $("$CTL" check "$T/p.yaml" 2>&1)"
"$CTL" load "$T/p.yaml" > "$T/load.out" || fail "load: $(cat "$T/load.out")"
grep -q 'protected (p99 1000 us)' "$T/load.out" || fail "load did not say db is protected: $(cat "$T/load.out")"

timeout 30 "$CTL" run -s batch -- dd if=/dev/zero of=/dev/null bs=64k status=none &
bpid=$!
cleanup_hooks+=("kill $bpid 2>/dev/null")
# load started the controller (protect-agent, a decision every 250 ms) in its own session.
grep -q 'started a protect-agent' "$T/load.out" || fail "load started no protect-agent: $(cat "$T/load.out")"
apid=$(protect_agent_of db)
[ "$apid" != 0 ] || fail "no protect-agent serves db 5 s after load"
cleanup_hooks+=("kill $apid 2>/dev/null")
"$CTL" load "$T/p.yaml" | grep -q 'a protect-agent runs already' || fail "a second load did not see the agent"
"$CTL" protect-agent "$T/p.yaml" --for 1 > "$T/second.out" 2>&1 && fail "a second protect-agent ran"
grep -q "already served by protect-agent pid $apid" "$T/second.out" || fail "second agent: $(cat "$T/second.out")"
wait_attached batch 1
sleep 0.5
[ "$(jq_stat batch 'd["limits"][0]')" = "reads=40MiB/s" ] || fail "batch does not start at its rate: $(jq_stat batch 'd["limits"]')"

# db: each read waits ~2 ms or more for its byte (about 4 s of feed).
python3 -c '
import os, sys, time
for _ in range(1600):
    os.write(1, b"x"); time.sleep(0.002)' |
  timeout 30 "$CTL" run -s db -- dd of=/dev/null bs=1 status=none &
dpid=$!
cleanup_hooks+=("kill $dpid 2>/dev/null")
squeezed=""
for _ in $(seq 1 40); do
  sleep 0.1
  [ "$(jq_stat batch 'd["limits"][0]')" = "reads=4MiB/s" ] && { squeezed=1; break; }
done
[ -n "$squeezed" ] || fail "batch was not squeezed to its floor: $(jq_stat batch 'd["limits"]'); db: $(jq_stat db 'd["protect"]')"
sleep 0.3
a=$(sample batch read); sleep 1; b=$(sample batch read)
check_rate "batch squeezed" "$(rate_between "$a" "$b")" 1 $((4 * MiB)) 0.5 1.3
[ "$(jq_stat db 'd["protect"]["decision"]')" = decrease ] || fail "db's last decision: $(jq_stat db 'd["protect"]')"
p99=$(jq_stat db 'd["protect"]["p99_ns"]')
check_between "db's measured p99 (ns)" "$p99" 1500000 50000000
[ "$(jq_stat db 'd["protect"]["target_p99_ns"]')" = 1000000 ] || fail "target: $(jq_stat db 'd["protect"]')"
"$CTL" stat db | grep -q 'protect: read p99 target 1.000 ms; last period' || fail "stat: $("$CTL" stat db)"
"$CTL" stat --prometheus db 2>/dev/null | grep -q '^bonsai_protect_p99_seconds{service="db"}' ||
  fail "no bonsai_protect_p99_seconds in: $("$CTL" stat --prometheus db 2>&1 | grep protect)"

# The feed ends: db is idle, batch gets its rate back (doubling from the floor: ~4 periods).
wait $dpid 2>/dev/null
t0=$(now_ns)
back=""
for _ in $(seq 1 50); do
  sleep 0.1
  [ "$(jq_stat batch 'd["limits"][0]')" = "reads=40MiB/s" ] && { back=1; break; }
done
[ -n "$back" ] || fail "batch not back at 40MiB/s 5 s after db went idle: $(jq_stat batch 'd["limits"]')"
note "batch back at its rate $(secs_since "$t0") s after db's last read"
sleep 0.3
a=$(sample batch read); sleep 1; b=$(sample batch read)
check_rate "batch after db stopped" "$(rate_between "$a" "$b")" 1 $((40 * MiB)) 0.6 1.15
kill -TERM "$apid"
for _ in $(seq 1 50); do
  kill -0 "$apid" 2>/dev/null || break
  sleep 0.1
done
[ "$(jq_stat db 'd["protect"]["controller_pid"]')" = 0 ] || fail "the agent left its pid behind"
[ "$(jq_stat batch 'd["limits"][0]')" = "reads=40MiB/s" ] || fail "the agent's exit left batch at $(jq_stat batch 'd["limits"]')"
exit 0
