#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A container's process that runs as another uid than the segment's owner (podman
# --user 65534 with root's service device) cannot open the 0600 segment: it is told so
# (docs/reference/containers.md): the path, "permission denied", whose the segment is and which
# uid it runs as, what to do; once, and it runs (without the service's limits).
# timeout: 60
. "$(dirname "$0")/lib/cdi_lib.sh"

W=$(svc w)
load_yaml "version: 1
services:
  $W:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
glibc_root bookworm
CN=$((CN + 1)) CID=${BONSAI_SHM_PREFIX}c$CN
podman run -d --name "$CID" --user 65534:65534 --device "bonsai.dev/service=$W" --rootfs "$ROOT" \
  dd if=/dev/zero of=/dev/null bs=64k count=16 > /dev/null 2> "$T/run.err" || fail "podman run: $(cat "$T/run.err")"
rc=$(cwait "$CID")
log=$T/$CID.log
[ "$rc" = 0 ] || fail "dd as uid 65534: exit $rc: $(cat "$log")"
seg=/dev/shm/${BONSAI_SHM_PREFIX}bonsai.0.$W
want="cannot open $seg: permission denied (the segment belongs to uid 0, this process runs as uid 65534: run it as the segment's user; docs/reference/containers.md)"
grep -qF "$want" "$log" || fail "dd as uid 65534 said: $(cat "$log")"
[ "$(grep -c 'bonsai' "$log")" = 1 ] || fail "said more than once: $(cat "$log")"
note "$(grep bonsai "$log")"
exit 0
