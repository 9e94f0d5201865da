#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A tenant rewriting its segment's fleet block cannot steer the fleet agent (issue 58):
# a process with the segment files mapped read-write (what a container's device gives)
# points the fleet service `web` and a plain service `other` (no fleet:, its fleet flag
# set by the tenant) at a listener of this test's own on 127.0.0.1, with the password
# file a root-only file, a 50 ms period, caps of 1 TB/s and another namespace, every
# 20 ms for 3 s. Within those 30 agent periods nothing connects to the listener, no byte
# of the file leaves, `other` is never served, and the real fleet keeps its lease from
# the real Redis with a want within the trusted cap. (Before the fix: the agent
# connected within a period and sent AUTH with the file's first line.)
# timeout: 90
. "$(dirname "$0")/lib/fleet_lib.sh"
need_cmd g++

g++ -std=c++20 -Wno-invalid-offsetof -I"$FLEET_REPO/libbonsai" "$TLIB/fleet_offsets.cc" -o "$T/offsets" \
  2> "$T/gxx.log" || fail "cannot build fleet_offsets: $(cat "$T/gxx.log")"
OFF=$("$T/offsets")

fleet_redis_start
cfg=$T/fleet.yaml
fleet_config "$cfg" 8MiB/s 100ms
cat >> "$cfg" <<'EOC'
  other:
    limits:
      - calls: [write]
        rate: 1MiB/s
EOC
secret=$T/secret
printf 'TOPSECRET-%s%s\n' "$RANDOM" "$RANDOM" > "$secret"
chmod 600 "$secret"
word=$(head -c 18 "$secret")

lport=$(free_port)
python3 "$TLIB/fleet_tenant.py" listen "$lport" "$T/listener.log" 60 &
lpid=$!
cleanup_hooks+=("kill $lpid 2>/dev/null")
for _ in $(seq 1 50); do grep -q listening "$T/listener.log" 2>/dev/null && break; sleep 0.05; done
grep -q listening "$T/listener.log" || fail "the listener did not start"

fleet_agent_start 1
sleep 0.2
in_host 1 "$CTL" load "$cfg" > /dev/null 2> "$T/load.err" || fail "load: $(cat "$T/load.err")"
for _ in $(seq 1 40); do
  [ "$(fleet_field 1 'd["fleet"]["renewals"]')" -gt 0 ] && break
  sleep 0.1
done
r0=$(fleet_field 1 'd["fleet"]["renewals"]')
[ "$r0" -gt 0 ] || fail "no lease before the attack: $(cat "$T/agent1.log")"
c0=$(evalsha_calls)

seg() { echo "/dev/shm/$(ns 1)bonsai.$(id -u).$1"; }
for s in web other; do
  python3 "$TLIB/fleet_tenant.py" forge "$(seg $s)" "$OFF" 3 "redis://127.0.0.1:$lport" "$secret" &
  cleanup_hooks+=("kill $! 2>/dev/null")
done
sleep 3.2
# The want the agent computed while the caps in the segment said 1 TB/s.
want=$(fleet_field 1 'd["fleet"]["rules"][0]["want"]')
sleep 0.5  # a connection the last forged period made is seen
kill "$lpid"; wait "$lpid" 2>/dev/null
r1=$(fleet_field 1 'd["fleet"]["renewals"]')
c1=$(evalsha_calls)
state=$(fleet_field 1 'd["fleet"]["state"]')
conns=$(grep -c '^connection' "$T/listener.log")
bytes=$(awk '$1 == "recv" { n += $2 } END { print n + 0 }' "$T/listener.log")
note "listener: $conns connections, $bytes bytes; lease calls to the real Redis during the attack: $((c1 - c0)); renewals $r0 -> $r1; want $want"
[ "$conns" = 0 ] || fail "the agent connected to the tenant's listener $conns times: $(cat "$T/listener.log")"
[ "$bytes" = 0 ] || fail "$bytes bytes reached the tenant's listener"
grep -q "$word" "$T/listener.log" && fail "the root-only file's first line reached the tenant's listener"
grep -q "serving other" "$T/agent1.log" && fail "the agent served a segment because its fleet flag was set: $(cat "$T/agent1.log")"
[ "$state" = leased ] || fail "the real fleet lost its lease: $state; $(cat "$T/agent1.log")"
[ $((r1 - r0)) -ge 15 ] || fail "the real fleet renewed $((r1 - r0)) times in 3+ s at 100 ms: $(cat "$T/agent1.log")"
[ $((c1 - c0)) -ge 15 ] || fail "the real Redis served $((c1 - c0)) lease calls during the attack"
# A period of the trusted cap: 8 MiB/s x 100 ms.
[ "$want" -le $((8 * MiB / 10 + 1)) ] || fail "the agent asked for $want units, beyond a period of the trusted cap"
exit 0
