#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two containers of one service share its cap (issue #47, docs/reference/containers.md): under
# `scope: service` and writes=2MiB/s, two bookworm containers with the device write with
# dd; while both are attached (the host's stat lists two processes, by host pid), the
# service as a whole moves 2 MiB/s, not 4: one bucket of the host's segment. Then a host
# process joins them under the same cap. (Rates from the host's counters over 1.5 s,
# so a late start of one container on a loaded machine does not matter.)
# timeout: 60
# parallel: no (rates within 25%)
. "$(dirname "$0")/lib/cdi_lib.sh"

W=$(svc shared)
load_yaml "version: 1
services:
  $W:
    scope: service
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
glibc_root bookworm
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=16k count=100000
a=$CID
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=16k count=100000
b=$CID
wait_attached "$W" 2
pids=$(jq_stat "$W" "sorted(p['pid'] for p in d['processes'])")
want=$(printf '%s\n' "$(chost_pid "$a")" "$(chost_pid "$b")" | sort -n | paste -sd, | sed 's/,/, /; s/^/[/; s/$/]/')
[ "$pids" = "$want" ] || fail "stat lists $pids, the containers' host pids are $want"
# rate SECS: bytes per second the service writes over SECS.
rate() {
  local x y tx ty
  tx=$(now_ns); x=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  sleep "$1"
  ty=$(now_ns); y=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  awk -v a="$x" -v b="$y" -v ta="$tx" -v tb="$ty" 'BEGIN { printf "%.0f", (b - a) / ((tb - ta) / 1e9) }'
}
sleep 0.3
check_rate "two containers, one cap (writes=2MiB/s)" "$(rate 1.5)" 1 $((2 * MiB)) 0.75 1.25
env LD_PRELOAD="$LIB" BONSAI_SERVICE="$W" dd if=/dev/zero of=/dev/null bs=16k count=100000 status=none &
hostdd=$!
cleanup_hooks+=("kill $hostdd 2>/dev/null")
wait_attached "$W" 3
sleep 0.3
check_rate "two containers and a host process, one cap" "$(rate 1.5)" 1 $((2 * MiB)) 0.75 1.25
kill "$hostdd"
podman kill "$a" "$b" > /dev/null || fail "podman kill"
podman wait "$a" "$b" > /dev/null 2>&1
[ "$(jq_stat "$W" 'len(d["processes"])')" = 0 ] || fail "slots left: $("$CTL" stat "$W")"
exit 0
