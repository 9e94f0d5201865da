#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two containers of one service share its cap (issue #47, docs/containers.md): under
# `scope: service` and writes=2MiB/s, two bookworm containers started together with
# the device each write 4 MiB with dd; they hold one bucket of the host's segment, so
# both take about 4 s (each alone would take 2), and the host counts the 8 MiB.
# timeout: 45
# parallel: no (rates within 15%)
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
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=64
a=$CID
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=64
b=$CID
for c in $a $b; do
  rc=$(cwait "$c")
  [ "$rc" = 0 ] || { cat "$T/$c.log" >&2; fail "dd in $c exited $rc"; }
done
sa=$(sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p' "$T/$a.log")
sb=$(sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p' "$T/$b.log")
note "dd's own times: $sa s and $sb s (alone: 2 s each)"
# The later one ends when the pair has written 8 MiB: 4 s at the shared cap (its
# start is up to a podman start later than the first's).
longest=$(awk -v a="$sa" -v b="$sb" 'BEGIN { print (a > b) ? a : b }')
check_between "the longer dd (8 MiB between two containers at one 2 MiB/s cap)" "$longest" 3.3 4.6
check_between "the shorter dd" "$(awk -v a="$sa" -v b="$sb" 'BEGIN { print (a < b) ? a : b }')" 2.6 4.6
bytes=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
[ "$bytes" = $((8 * MiB)) ] || fail "the host counted $bytes bytes written, not 8 MiB"
[ "$(jq_stat "$W" "d['exited']['processes']")" = 2 ] || fail "the host does not count 2 exited processes"
exit 0
