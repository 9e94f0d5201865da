#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A container as a member of a host's service (issue #47, docs/reference/containers.md): after
# `bonsaictl cdi generate`, `podman run --device bonsai.dev/service=NAME` with nothing
# else runs dd in a Debian bookworm root under the service's writes=2MiB/s: 8 MiB take
# 4 s (+-10% here; bench/scenarios/cdi.sh holds it to 3%), the host's `stat` lists the process by
# its host pid (the container's pid 1 is not the host's init) while it runs and counts
# its 8 MiB after it exits. The same in a bullseye root (glibc 2.31).
# timeout: 90
# parallel: no (a rate within 10%)
. "$(dirname "$0")/lib/cdi_lib.sh"

W=$(svc web)
load_yaml "version: 1
services:
  $W:
    scope: service
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
grep -q "name: \"$W\"" "$SPEC" || fail "no device $W in $SPEC"

for suite in bookworm bullseye; do
  glibc_root $suite
  before=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  start=$(now_ns)
  crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=128
  if [ $suite = bookworm ]; then
    wait_attached "$W" 1
    hp=$(chost_pid "$CID")
    got=$(jq_stat "$W" '[(p["pid"], p.get("ns_pid"), p["comm"]) for p in d["processes"]]')
    [ "$got" = "[($hp, 1, 'dd')]" ] || fail "stat names $got, expected [($hp, 1, 'dd')] (host pid $hp, pid 1 inside)"
    "$CTL" stat "$W" | grep -q "^  $hp dd " || { "$CTL" stat "$W" >&2; fail "stat's table does not name host pid $hp"; }
    "$CTL" stat --pid "$hp" | grep -q "^pid $hp (dd.*) is attached to service $W " ||
      fail "stat --pid $hp: $("$CTL" stat --pid "$hp" 2>&1)"
    note "$suite: stat names the container's dd by its host pid $hp (pid 1 inside); stat --pid $hp finds it"
  fi
  rc=$(cwait "$CID")
  secs=$(secs_since "$start")
  [ "$rc" = 0 ] || { cat "$T/$CID.log" >&2; fail "$suite: dd in the container exited $rc"; }
  grep -q '^8388608 bytes' "$T/$CID.log" || fail "$suite: dd said: $(cat "$T/$CID.log")"
  dd_secs=$(sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p' "$T/$CID.log")
  note "$suite: podman run to exit $secs s, dd's own $dd_secs s"
  check_rate "$suite: dd in a container (writes=2MiB/s)" $((8 * MiB)) "$dd_secs" $((2 * MiB)) 0.90 1.10
  after=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
  [ $((after - before)) = $((8 * MiB)) ] || fail "$suite: the host counted $((after - before)) bytes written, not 8 MiB"
  [ "$(jq_stat "$W" 'len(d["processes"])')" = 0 ] || fail "$suite: a slot is left after the container exited"
done
exit 0
