#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsai-oci-runtime (docs/reference/containers.md): images with no shell, no libc and no loader,
# the device and nothing else in the command. A scratch image whose command is a static
# Go writer (gocat: io.Copy of 16 MiB) under writes=4MiB/s takes >= 3.9 s and the host's
# stat counts its 16 MiB; a distroless-like image (the same program, /etc/passwd with
# nonroot, run as uid 65532: root's 0600 segment stays closed to that uid on the host)
# writes 8 MiB in ~2 s, counted too. Without the runtime the device's createRuntime hook
# refuses to start the scratch container, saying why (before the hook it wrote 16 MiB in
# 0.04 s, uncapped and unseen by stat).
# timeout: 90
# parallel: no (rates within 15%)
. "$(dirname "$0")/lib/cdi_lib.sh"
[ -x "$OCI_RT" ] || fail "no $OCI_RT (make builds it)"
build_gocat || skip "no static Go program: $(tail -n1 "$T/gobuild.log")"
file -L "$GOCAT" | grep -q 'statically linked' || skip "$GOCAT is not static"

G=$(svc go)
D=$(svc dless)
load_yaml "version: 1
services:
  $G:
    limits:
      - calls: [writes]
        rate: 4MiB/s
  $D:
    limits:
      - calls: [writes]
        rate: 4MiB/s"
gen_spec

# scratch: /app and its data; distroless-like: the same and nonroot's passwd entry.
mkroot() {
  mkdir -p "$1/data" "$1/tmp" "$1/etc" || fail "mkdir $1"
  cp "$GOCAT" "$1/app" && make_data "$1/data/src" "$2" || fail "cp gocat"
  chmod 755 "$1" "$1/data" "$1/etc" && chmod 644 "$1/data/src" && chmod 1777 "$1/tmp"
}
mkroot "$T/scratch" 16
mkroot "$T/dless" 8
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$T/dless/etc/passwd"
! ls "$T/scratch" | grep -qv '^app$\|^data$\|^tmp$\|^etc$' || fail "the scratch root holds more: $(ls "$T/scratch")"

# Plain runc with the device: the static command is out of the library's reach, and the
# device's hook refuses the start, saying why, rather than let it run uncapped.
CN=$((CN + 1)) CID=${BONSAI_SHM_PREFIX}c$CN
rc=0
podman run --name "$CID" --device "bonsai.dev/service=$G" --rootfs "$T/scratch" /app /data/src /tmp/dst \
  > "$T/plain.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q 'bonsai: /app is a Go program: .*WITHOUT LIMITS.*--runtime' "$T/plain.out" ||
  fail "without the runtime: exit $rc, $(cat "$T/plain.out")"
! grep -q 'secs=' "$T/plain.out" || fail "the static command ran without the runtime: $(cat "$T/plain.out")"
note "without bonsai-oci-runtime: refused: $(grep -o 'bonsai: /app is a Go program[^;]*' "$T/plain.out")"
# Bytes written by any call (io.Copy between files moves them with copy_file_range).
written() { jq_stat "$1" "sum(v['bytes'] for k, v in d['total']['calls'].items() if k in ('write', 'pwrite', 'writev', 'copy_file_range', 'sendfile', 'splice'))"; }
before=$(written "$G")

CRUN_OPTS=(--runtime "$OCI_RT")
crun "$G" "$T/scratch" /app /data/src /tmp/dst
go=$CID
CRUN_OPTS=(--runtime "$OCI_RT" --user 65532:65532)
crun "$D" "$T/dless" /app /data/src /tmp/dst
dl=$CID
for c in $go $dl; do
  rc=$(cwait "$c")
  [ "$rc" = 0 ] || fail "$c exited $rc: $(cat "$T/$c.log")"
  ! grep -q 'WITHOUT LIMITS\|NOT limited\|cannot open' "$T/$c.log" || fail "$c: $(cat "$T/$c.log")"
done
gsecs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' "$T/$go.log")
check_between "static Go in a scratch image, 16 MiB at 4 MiB/s through bonsai-oci-runtime (s)" "$gsecs" 3.9 4.6
dsecs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' "$T/$dl.log")
check_rate "distroless-like image as uid 65532, 8 MiB (writes=4MiB/s)" $((8 * MiB)) "$dsecs" $((4 * MiB)) 0.85 1.15
gb=$(( $(written "$G") - before ))
db=$(written "$D")
[ "$gb" -ge $((16 * MiB)) ] && [ "$gb" -lt $((16 * MiB + 4096)) ] || fail "the host counted $gb bytes of the Go container, not 16 MiB"
[ "$db" -ge $((8 * MiB)) ] && [ "$db" -lt $((8 * MiB + 4096)) ] || fail "the host counted $db bytes of the uid 65532 container, not 8 MiB"
note "the host counted $gb and $db bytes"
# Root's segment stayed root's alone on the host.
[ "$(stat -c %a:%u "$(seg_file "$D")")" = 600:0 ] || fail "the segment's mode changed: $(stat -c %a:%u "$(seg_file "$D")")"
exit 0
