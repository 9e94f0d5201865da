#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A tenant cannot keep the protect-agent away (issue 58): the controller's pid and start
# time are in the protected service's segment, which its processes can write. A tenant
# writes there a live process of the same user that is no protect-agent (a `sleep`,
# with its true start time): `load` must still start an agent (before the fix it said
# "a protect-agent runs already" and none ran), and the agent must take the service.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd g++ python3

g++ -std=c++20 -Wno-invalid-offsetof -I"$TLIB/../../../libbonsai" "$TLIB/fleet_offsets.cc" -o "$T/offsets" \
  2> "$T/gxx.log" || fail "cannot build fleet_offsets: $(cat "$T/gxx.log")"
OFF=$("$T/offsets")

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
[ "$apid" != 0 ] || fail "no protect-agent serves db after load"
kill -TERM "$apid"
for _ in $(seq 1 50); do kill -0 "$apid" 2>/dev/null || break; sleep 0.1; done

sleep 60 & decoy=$!
cleanup_hooks+=("kill $decoy 2>/dev/null")
python3 - "$(seg_file db)" "$OFF" "$decoy" <<'PY' || fail "could not write the claim"
import struct, sys
path, offs, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
off = {k: int(v) for k, v in (w.split("=") for w in offs.split())}
stat = open("/proc/%d/stat" % pid).read()
start = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22
with open(path, "r+b") as f:
    f.seek(off["controller_start"]); f.write(struct.pack("<Q", start))
    f.seek(off["controller_pid"]); f.write(struct.pack("<I", pid))
PY
"$CTL" load "$T/p.yaml" > "$T/load2.out" 2>&1 || fail "load: $(cat "$T/load2.out")"
note "load with a live decoy claimed as the controller: $(grep protect: "$T/load2.out")"
grep -q 'started a protect-agent' "$T/load2.out" || fail "a claimed live pid kept the protect-agent away: $(cat "$T/load2.out")"
apid=$(protect_agent_of db)
for _ in $(seq 1 50); do
  apid=$(jq_stat db 'd["protect"]["controller_pid"]')
  [ "$apid" != 0 ] && [ "$apid" != "$decoy" ] && break
  sleep 0.1
done
[ "$apid" != 0 ] && [ "$apid" != "$decoy" ] || fail "no agent took db past the decoy: $(jq_stat db 'd["protect"]')"
cleanup_hooks+=("kill $apid 2>/dev/null")
tr '\0' ' ' < "/proc/$apid/cmdline" | grep -q "protect-agent" || fail "db's controller $apid is no protect-agent"
exit 0
