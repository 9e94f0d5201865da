#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsai-oci-runtime (docs/reference/containers.md) and a container user who is not the segment's
# owner: dd of 8 MiB as uid 1000 in a bookworm container with root's service device
# under writes=2MiB/s takes 4 s +-3% (dd's own time) and the host's stat counts it; the
# segment stays mode 0600, root's (the runtime hands the container an open descriptor).
# Without the runtime the same container says "permission denied" once and runs uncapped
# (t_tenant_cdi_nonroot). Then the same with the runtime made the default in
# containers.conf, as the docs' drop-in does.
# timeout: 60
# parallel: no (dd's time within 3%)
. "$(dirname "$0")/lib/cdi_lib.sh"
[ -x "$OCI_RT" ] || fail "no $OCI_RT (make builds it)"
W=$(svc user)
load_yaml "version: 1
services:
  $W:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
glibc_root bookworm
CRUN_OPTS=(--runtime "$OCI_RT" --user 1000:1000)
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=128
rc=$(cwait "$CID")
log=$T/$CID.log
[ "$rc" = 0 ] || fail "dd as uid 1000 exited $rc: $(cat "$log")"
! grep -q 'bonsai' "$log" || fail "dd as uid 1000 said: $(cat "$log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$log")
check_between "dd of 8 MiB as uid 1000 under writes=2MiB/s (s)" "$secs" 3.88 4.12
bytes=$(total_bytes "$W" write)
[ "$bytes" -ge $((8 * MiB)) ] && [ "$bytes" -lt $((8 * MiB + 4096)) ] || fail "the host counted $bytes bytes, not 8 MiB"
[ "$(stat -c %a:%u "$(seg_file "$W")")" = 600:0 ] || fail "the segment's mode changed"

# The set-up docs/reference/containers.md gives: the runtime named in containers.conf as the default
# (a drop-in there; this test's own file here), no --runtime on the command line.
sed 's/^runtime = "runc"$/runtime = "bonsai"/' "$CONTAINERS_CONF" > "$T/rt.conf"
printf '[engine.runtimes]\nbonsai = ["%s"]\n' "$OCI_RT" >> "$T/rt.conf"
CRUN_OPTS=(--user 1000:1000)
export CONTAINERS_CONF=$T/rt.conf  # from here on, also for podman wait, logs and rm
crun "$W" "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=64
rc=$(cwait "$CID")
[ "$rc" = 0 ] && ! grep -q bonsai "$T/$CID.log" || fail "dd with the runtime from containers.conf: exit $rc: $(cat "$T/$CID.log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/$CID.log")
check_rate "dd of 4 MiB as uid 1000, the runtime from containers.conf (writes=2MiB/s)" $((4 * MiB)) "$secs" $((2 * MiB)) 0.9 1.1
podman rm -f -t 0 "$CID" > /dev/null 2>&1  # here, while this conf names its runtime
exit 0
