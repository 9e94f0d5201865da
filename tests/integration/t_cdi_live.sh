#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host's control reaches a running container (issue #47, docs/reference/containers.md): dd
# in a bookworm container runs at the service's writes=1MiB/s; a `bonsaictl set` on
# the host to 4MiB/s reaches it live (the rate stat measures moves to 4 MiB/s). Then
# the container is killed (SIGKILL: the library in it never releases its slot): the
# host's stat reclaims the slot of the dead container's pid 1 (not mistaken for the
# host's init) and counts it as exited.
# timeout: 45
# parallel: no (rates within 25%)
. "$(dirname "$0")/lib/cdi_lib.sh"

W=$(svc live)
load_yaml "version: 1
services:
  $W:
    scope: service
    limits:
      - calls: [writes]
        rate: 1MiB/s"
gen_spec
glibc_root bookworm
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=16k count=100000
wait_attached "$W" 1
# rate SECS: bytes per second the service writes over SECS.
rate() {
  local a b ta tb
  ta=$(now_ns); a=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  sleep "$1"
  tb=$(now_ns); b=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  awk -v a="$a" -v b="$b" -v ta="$ta" -v tb="$tb" 'BEGIN { printf "%.0f", (b - a) / ((tb - ta) / 1e9) }'
}
sleep 0.3
check_rate "before set (1MiB/s)" "$(rate 1.5)" 1 $((1 * MiB)) 0.75 1.25
"$CTL" set "$W" 'writes=4MiB/s' > /dev/null || fail "set"
sleep 0.3
check_rate "after a live set on the host (4MiB/s)" "$(rate 1.5)" 1 $((4 * MiB)) 0.75 1.25
hp=$(chost_pid "$CID")
podman kill -s KILL "$CID" > /dev/null || fail "podman kill"
podman wait "$CID" > /dev/null 2>&1
! kill -0 "$hp" 2> /dev/null || fail "the container's dd (host pid $hp) still runs"
[ "$(jq_stat "$W" 'len(d["processes"])')" = 0 ] || fail "the dead container's slot was not reclaimed: $("$CTL" stat "$W")"
[ "$(jq_stat "$W" "d['exited']['processes']")" = 1 ] || fail "the dead container's process is not counted as exited"
note "the killed container's slot (host pid $hp, pid 1 inside) was reclaimed"
exit 0
