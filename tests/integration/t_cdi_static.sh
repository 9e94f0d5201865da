#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Static programs in containers (issue #47, docs/reference/containers.md): busybox-static's dd in
# a bookworm container with the device is capped by the supervisor the device mounts
# (/run/bonsai/sv/bonsaictl: one static program, mounted read-only), both when a
# preloaded dynamic parent (sh) executes it and when it is the container's command
# through `sv-exec` (the internal form, as older releases wrote it); so is a static Go program
# (gocat, io.Copy of a file) started by sh. 4 MiB at writes=2MiB/s (scope process) take
# 2 s each (6 MiB, 3 s, for the command); the host's stat lists the supervised dd by its
# host pid.
# timeout: 45
# parallel: no (rates within 15%)
. "$(dirname "$0")/lib/cdi_lib.sh"
BB=$(command -v busybox) || skip "busybox-static not installed (make deps)"
file -L "$BB" | grep -q 'statically linked' || skip "$BB is not static (busybox-static: make deps)"

W=$(svc static)
load_yaml "version: 1
services:
  $W:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
glibc_root bookworm
root_scratch "$ROOT"
cp "$BB" "$SCR/busybox" || fail "cp busybox"
go=
if build_gocat; then
  cp "$GOCAT" "$SCR/gocat" && make_data "$SCR/src" 4 || fail "cp gocat"
  go=1
else
  note "no Go case: $(tail -n1 "$T/gobuild.log")"
fi
# The command itself through sv-exec (6 MiB: 3 s), listed by its host pid while it runs.
crun "$W" "$ROOT" /run/bonsai/sv/bonsaictl sv-exec -- "$SCR_IN/busybox" dd if=/dev/zero of=/dev/null bs=64k count=96
direct=$CID
listed=
for i in $(seq 1 100); do
  hp=$(chost_pid "$direct")
  [ "${hp:-0}" != 0 ] && [ "$(jq_stat "$W" "[p['supervised'] for p in d['processes'] if p['pid'] == $hp]")" = "[True]" ] &&
    { listed=1; break; }
  sleep 0.1
done
[ -n "$listed" ] || fail "stat did not list the supervised busybox dd by its host pid ${hp:-?}: $("$CTL" stat "$W")"
note "stat lists the supervised busybox dd by its host pid $hp"
crun "$W" "$ROOT" sh -c "$SCR_IN/busybox dd if=/dev/zero of=/dev/null bs=64k count=64"
child=$CID
gocid=
if [ -n "$go" ]; then
  crun "$W" "$ROOT" sh -c "$SCR_IN/gocat $SCR_IN/src $SCR_IN/dst"
  gocid=$CID
fi
for c in $direct $child; do
  start=$(now_ns)
  rc=$(cwait "$c")
  [ "$rc" = 0 ] || { cat "$T/$c.log" >&2; fail "busybox dd in $c exited $rc"; }
  ! grep -q 'WITHOUT LIMITS\|NOT limited' "$T/$c.log" || fail "$c: $(cat "$T/$c.log")"
done
if [ -n "$gocid" ]; then
  rc=$(cwait "$gocid")
  [ "$rc" = 0 ] || { cat "$T/$gocid.log" >&2; fail "gocat in $gocid exited $rc"; }
  gsecs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' "$T/$gocid.log")
  check_rate "Go io.Copy in a container, started by sh (writes=2MiB/s)" $((4 * MiB)) "$gsecs" $((2 * MiB)) 0.85 1.15
  same_data "$SCR/src" "$SCR/dst"
fi
# busybox's dd prints no time: the service's held time says how long each was held back.
waited=$(jq_stat "$W" "(d['total']['calls']['write']['wait_ns']) / 1e9")
bytes=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
# 10 MiB and dd's two lines of summary each.
[ "$bytes" -ge $((10 * MiB)) ] && [ "$bytes" -lt $((10 * MiB + 512)) ] ||
  fail "the host counted $bytes bytes written by the two busybox dd, not 8 MiB"
check_between "seconds the two busybox dd were held (6 and 4 MiB at 2MiB/s each: ~3 + 2 s)" "$waited" 4.4 5.4
exit 0
