#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Rootless Podman (issue #47, docs/reference/containers.md): user nobody's service, its spec
# written by root (`cdi generate --user nobody`: the device is NAME:u65534), and nobody's own rootless Podman (a user
# namespace where nobody is root): the library and the supervisor find the segment owned
# by the uid the host's owner maps to, and join. dd (dynamic) and busybox-static's dd
# (as the command, through sv-exec) are held to writes=2MiB/s: 2 MiB in about 1 s each,
# and the host's stat counts both. Skips where nobody cannot run rootless Podman here.
# timeout: 40
# parallel: no (rates within 15%)
. "$(dirname "$0")/lib/cdi_lib.sh"
nobody_loads_lib || skip "user nobody cannot read $LIB (the build tree is private)"
BB=$(command -v busybox) && file -L "$BB" | grep -q 'statically linked' || skip "busybox-static not installed (make deps)"

N=$(svc rootless)
load_yaml "version: 1
services:
  $N:
    user: nobody
    scope: service
    limits:
      - calls: [writes]
        rate: 2MiB/s"
"$CTL" cdi generate --user nobody --output "$SPEC" > /dev/null || fail "cdi generate --user nobody"
grep -q '"BONSAI_SHM_UID=65534"' "$SPEC" || fail "the spec does not name nobody's segments"
glibc_root bookworm
root_scratch "$ROOT"
cp "$BB" "$SCR/busybox" || fail "cp busybox"
# nobody cannot make the device's mount points in a root's folder (an image's upper layer
# it could): made here, in the cached root, as the rootful tests' runc makes them.
sed -n 's|^ *containerPath: "\(/run/bonsai/.*\)"$|\1|p' "$SPEC" | while read -r p; do
  mkdir -p "$ROOT$(dirname "$p")" && { [ -e "$ROOT$p" ] || : > "$ROOT$p"; }
done
# nobody's Podman: its own storage and runtime folders, its pause process killed at the end.
H=$(mktemp -d /tmp/bonsai-rootless.XXXXXX) || fail "mktemp"
cleanup_hooks+=("[ -f '$H/run/libpod/tmp/pause.pid' ] && kill \$(cat '$H/run/libpod/tmp/pause.pid'); rm -rf '$H'")
mkdir -p "$H/run" "$H/data" "$H/cfg" && cp "$CONTAINERS_CONF" "$H/containers.conf" && chmod 755 "$H" &&
  chmod 644 "$H/containers.conf" && chown -R nobody:nogroup "$H/run" "$H/data" "$H/cfg" && chmod 700 "$H/run" ||
  fail "nobody's folders"
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$H" \
    XDG_RUNTIME_DIR="$H/run" XDG_DATA_HOME="$H/data" XDG_CONFIG_HOME="$H/cfg" CONTAINERS_CONF="$H/containers.conf" "$@"
}
as_nobody podman run --rm --rootfs "$ROOT" true > "$T/probe" 2>&1 ||
  skip "nobody cannot run rootless Podman here: $(grep -v level=warn "$T/probe" | head -n1)"

as_nobody podman run --rm --device "bonsai.dev/service=$N:u65534" --rootfs "$ROOT" dd if=/dev/zero of=/dev/null bs=64k count=32 \
  > "$T/dd.out" 2>&1 || { cat "$T/dd.out" >&2; fail "rootless dd"; }
! grep -q '^bonsai' "$T/dd.out" || fail "rootless dd: $(grep '^bonsai' "$T/dd.out")"
secs=$(sed -n 's/.*copied, \([0-9.]*\) s.*/\1/p' "$T/dd.out")
check_rate "dd in a rootless container (writes=2MiB/s)" $((2 * MiB)) "$secs" $((2 * MiB)) 0.85 1.15
as_nobody podman run --rm --device "bonsai.dev/service=$N:u65534" --rootfs "$ROOT" /run/bonsai/sv/bonsaictl sv-exec -- \
  "$SCR_IN/busybox" dd if=/dev/zero of=/dev/null bs=64k count=32 > "$T/bb.out" 2>&1 || { cat "$T/bb.out" >&2; fail "rootless busybox dd"; }
! grep -q 'WITHOUT LIMITS\|^bonsai' "$T/bb.out" || fail "rootless busybox dd: $(cat "$T/bb.out")"
bytes=$("$CTL" stat --user nobody "$N" --json | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["total"]["calls"]["write"]["bytes"])')
[ "$bytes" -ge $((4 * MiB)) ] && [ "$bytes" -lt $((4 * MiB + 512)) ] || fail "the host counted $bytes bytes written, not 4 MiB"
waited=$("$CTL" stat --user nobody "$N" --json | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["total"]["calls"]["write"]["wait_ns"] / 1e9)')
check_between "seconds both rootless dd were held (2 x 2 MiB at 2MiB/s)" "$waited" 1.6 2.3
exit 0
