#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# protect: (issue 52) robustness. (1) A read the library makes in several real calls
# (a 1 MiB read under a 100 KiB chunk) is timed as one call. (2) A dead agent's pid,
# and that pid reused by another process (its start time differs), do not count as a
# live agent: stat says the controller is gone and `load` starts a new one. (3) The
# protected service's segment damaged mid-run: the agent gives the squeezed service its
# configured rate back, says so once, and exits 1 (nothing left to serve). (4) The
# services removed (`bonsaictl rm`) under a running agent: it notices within a second or
# two and exits (an agent whose services were all removed ran on for good).
# timeout: 50
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd python3 truncate

# (1) Split reads timed as one call each.
cat > "$T/split.yaml" <<'YAML'
version: 1
services:
  sp:
    protect: {calls: [read], p99: 10s, squeeze: [other]}
    scope: service
    limits:
      - {calls: [reads], rate: 12800KiB/s}
  other:
    limits:
      - {calls: [reads], rate: 1GB/s}
YAML
"$CTL" load "$T/split.yaml" > "$T/load0.out" || fail "load: $(cat "$T/load0.out")"
sp_agent=$(protect_agent_of sp)
[ "$sp_agent" != 0 ] || fail "no agent for sp"
cleanup_hooks+=("kill $sp_agent 2>/dev/null")
"$CTL" run -s sp -- dd if=/dev/zero of=/dev/null bs=1M count=8 status=none || fail "dd under sp"
timed=$(jq_stat sp 'd["protect"]["timed"]')
note "8 reads of 1 MiB in 100 KiB real calls: $timed timed"
check_between "protected reads timed (8 reads of 11 real calls each)" "$timed" 8 12
kill "$sp_agent"

# (2) The db/batch pair: a dead agent's pid, then that pid "reused".
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
"$CTL" load "$T/p.yaml" > "$T/load1.out" || fail "load: $(cat "$T/load1.out")"
apid=$(protect_agent_of db)
[ "$apid" != 0 ] || fail "no protect-agent serves db 5 s after load"
kill -KILL "$apid"
for _ in $(seq 1 50); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
[ "$(jq_stat db 'd["protect"]["controller_pid"]')" = 0 ] || fail "a killed agent still counts: $(jq_stat db 'd["protect"]')"
[ "$(jq_stat db 'd["protect"]["stale_pid"]')" = "$apid" ] || fail "stale pid: $(jq_stat db 'd["protect"]')"
"$CTL" stat db | grep -q "NO CONTROLLER running (pid $apid is gone)" || fail "stat: $("$CTL" stat db | grep protect)"
# Another process takes the place of the pid: a live sleep's pid, with the dead agent's start time.
sleep 30 & other=$!
cleanup_hooks+=("kill $other 2>/dev/null")
python3 - "$(seg_file db)" "$apid" "$other" <<'PY' || fail "could not find the controller's pid in db's segment"
import struct, sys
path, dead, live = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
# ShmProtect: target_ns (u64) at T, controller_pid (u32) at T + 36.
for t in range(0, len(data) - 48, 8):
    if struct.unpack_from("<Q", data, t)[0] == 1000000 and struct.unpack_from("<I", data, t + 36)[0] == dead:
        with open(path, "r+b") as f:
            f.seek(t + 36); f.write(struct.pack("<I", live))
        sys.exit(0)
sys.exit(1)
PY
[ "$(jq_stat db 'd["protect"]["controller_pid"]')" = 0 ] || fail "a reused pid counts as the agent: $(jq_stat db 'd["protect"]')"
"$CTL" load "$T/p.yaml" > "$T/load2.out" || fail "load: $(cat "$T/load2.out")"
grep -q 'started a protect-agent' "$T/load2.out" || fail "load did not start an agent past a reused pid: $(cat "$T/load2.out")"
apid=$(protect_agent_of db)
[ "$apid" != 0 ] && [ "$apid" != "$other" ] || fail "no new agent: $(jq_stat db 'd["protect"]')"
# (3) This one is replaced by one whose words are kept.
kill -TERM "$apid"
for _ in $(seq 1 50); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
"$CTL" protect-agent "$T/p.yaml" > "$T/agent.out" 2> "$T/agent.err" &
apid=$!
cleanup_hooks+=("kill $apid 2>/dev/null")
timeout 30 "$CTL" run -s batch -- dd if=/dev/zero of=/dev/null bs=64k status=none &
bpid=$!
cleanup_hooks+=("kill $bpid 2>/dev/null")
python3 -c '
import os, sys, time
try:
    for _ in range(2500):
        os.write(1, b"x"); time.sleep(0.002)
except BrokenPipeError:
    pass' |
  timeout 30 "$CTL" run -s db -- dd of=/dev/null bs=1 status=none &
dpid=$!
cleanup_hooks+=("kill $dpid 2>/dev/null")
squeezed=""
for _ in $(seq 1 50); do
  sleep 0.1
  [ "$(jq_stat batch 'd["limits"][0]')" = "reads=4MiB/s" ] && { squeezed=1; break; }
done
[ -n "$squeezed" ] || fail "batch was not squeezed to its floor: $(jq_stat batch 'd["limits"]'); agent: $(cat "$T/agent.out" "$T/agent.err")"
truncate -s 4096 "$(seg_file db)"
t0=$(now_ns)
rc=""
for _ in $(seq 1 50); do
  sleep 0.1
  kill -0 "$apid" 2>/dev/null || { wait "$apid"; rc=$?; break; }
done
[ "$rc" = 1 ] || fail "the agent did not exit 1 once its only protected segment was damaged (rc '$rc'): $(cat "$T/agent.err")"
note "agent out $(secs_since "$t0") s after the damage: $(cat "$T/agent.err")"
[ "$(jq_stat batch 'd["limits"][0]')" = "reads=40MiB/s" ] || fail "batch left squeezed at $(jq_stat batch 'd["limits"]')"
[ "$(grep -c 'no longer served' "$T/agent.err")" = 1 ] || fail "the damage not said exactly once: $(cat "$T/agent.err")"
grep -q "db.*damaged" "$T/agent.err" || fail "the agent did not name the damage: $(cat "$T/agent.err")"
sleep 0.3
a=$(sample batch read); sleep 1; b=$(sample batch read)
check_rate "batch after the damage" "$(rate_between "$a" "$b")" 1 $((40 * MiB)) 0.6 1.15
kill "$bpid" "$dpid" 2>/dev/null
wait "$bpid" "$dpid" 2>/dev/null

# (4) A fresh agent, then its services removed.
"$CTL" rm --force db batch > /dev/null 2>&1  # db is the damaged one of (3)
"$CTL" load "$T/p.yaml" > "$T/load3.out" || fail "load: $(cat "$T/load3.out")"
apid=$(protect_agent_of db)
[ "$apid" != 0 ] || fail "no protect-agent serves db after the last load"
cleanup_hooks+=("kill $apid 2>/dev/null")
"$CTL" rm db batch > "$T/rm.out" 2>&1 || fail "rm db batch: $(cat "$T/rm.out")"
t0=$(now_ns)
for _ in $(seq 1 50); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$apid" 2>/dev/null && fail "the agent still runs 5 s after its services were removed"
note "agent gone $(secs_since "$t0") s after rm"
exit 0
