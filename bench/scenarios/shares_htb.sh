#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The kernel's answer to shares for network egress, for comparison with bench/scenarios/shares.sh:
# tc HTB (rate + ceil per class under a parent at the capacity) on the loopback of a
# network namespace of its own (the host's loopback is never touched), the same two
# tenants and schedule as shares.sh, sending over TCP to a sink (no bonsai). Root only.
# Writes $RES/shares_htb_<tenant>.csv, $RES/shares_htb.csv (the figures), shares_htb_tc.txt.
# (The block-device counterpart, cgroup v2 io.weight with iocost, needs the io controller
# in the unified hierarchy and an io.cost.model: see docs/notes/bench-shares.md.)
source "$(dirname "$0")/../lib/common.sh"
[ "$(id -u)" = 0 ] || { note "shares_htb: needs root (tc, ip netns): skipped"; exit 0; }
command -v tc >/dev/null && command -v ip >/dev/null || { note "shares_htb: no tc/ip: skipped"; exit 0; }
build_helpers  # share_tenant
CAP=${SHARES_CAP_MIB:-32}
RATE_A=${SHARES_RATE_A_MIB:-$((CAP / 2))} RATE_B=${SHARES_RATE_B_MIB:-$((CAP / 2))}
# Full 15 s, as shares.sh (the same schedule, side by side in the report).
if [ "$BENCH" = full ]; then SECS=15; else SECS=9; fi
SECS=${SHARES_SECS:-$SECS}
MS=$((SECS * 1000)) THIRD=$((SECS * 1000 / 3))
NS=bonsai-shares-$$
ip netns add "$NS" || die "ip netns add"
trap 'ip netns pids "$NS" 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del "$NS"; rm -rf "$BENCH_TMP"' EXIT
in_ns() { ip netns exec "$NS" "$@"; }
in_ns ip link set lo up
in_ns tc qdisc add dev lo root handle 1: htb default 30 r2q 100  # r2q: quanta of ~300 KiB, not a warning
in_ns tc class add dev lo parent 1: classid 1:1 htb rate "${CAP}mibps" ceil "${CAP}mibps"
in_ns tc class add dev lo parent 1:1 classid 1:10 htb rate "${RATE_A}mibps" ceil "${CAP}mibps"
in_ns tc class add dev lo parent 1:1 classid 1:20 htb rate "${RATE_B}mibps" ceil "${CAP}mibps"
in_ns tc class add dev lo parent 1: classid 1:30 htb rate 10gbit  # acks and the rest: unshaped
in_ns tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip dport 5001 0xffff flowid 1:10
in_ns tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip dport 5002 0xffff flowid 1:20
for port in 5001 5002; do
  in_ns python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); c, _ = s.accept()
while c.recv(1 << 20): pass' "$port" &
done
sleep 0.5
note "shares_htb ($BENCH): tc HTB, capacity ${CAP} MiB/s, rates ${RATE_A} and ${RATE_B} MiB/s, ceilings at the capacity"
t0=$(python3 -c 'import time; print(time.monotonic_ns() + 500_000_000)')
in_ns "$HELP/share_tenant" "$t0" "$MS" 16384 "0-$((2 * THIRD))" 5001 >"$RES/shares_htb_a.csv" &
a=$!
in_ns "$HELP/share_tenant" "$t0" "$MS" 16384 "$THIRD-$MS" 5002 >"$RES/shares_htb_b.csv" &
b=$!
wait $a $b || die "a tenant failed"
in_ns tc -s class show dev lo >"$RES/shares_htb_tc.txt"
python3 "$BENCH_DIR/report/shares_report.py" "$RES" "$CAP" "$RATE_A" "$RATE_B" "$THIRD" "$MS" htb || die "report"
