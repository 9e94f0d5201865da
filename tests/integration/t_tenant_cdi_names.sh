#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One name, two users (docs/reference/containers.md): root's service V and user nobody's service
# V (root's `load` with `user: nobody`), each in its own spec. Root's spec names its
# device V, nobody's V:u65534; Podman resolves both, and the device V is root's service
# (the container's dd is held to root's rate and counted in root's segment), V:u65534
# nobody's. A spec file is never overwritten for another user: `cdi generate --user
# nobody --output ROOT'S SPEC` exits 2 and changes nothing, root's load of nobody's
# service rewrites nobody's spec, not root's, and nobody's own load leaves root's alone.
# timeout: 120
. "$(dirname "$0")/lib/cdi_lib.sh"
SPEC_N=/var/run/cdi/${BONSAI_SHM_PREFIX}nobody.yaml
cleanup_hooks+=("rm -f '$SPEC_N'")

V=$(svc v)
load_yaml "version: 1
services:
  $V:
    limits:
      - calls: [writes]
        rate: 4MiB/s"
gen_spec
yaml_n() {  # RATE: nobody's service V
  printf 'version: 1\nservices:\n  %s:\n    user: nobody\n    limits:\n      - calls: [writes]\n        rate: %s\n' "$V" "$1" > "$T/nobody.yaml"
}
yaml_n 64KiB/s
"$CTL" load "$T/nobody.yaml" > /dev/null || fail "load nobody's"
"$CTL" cdi generate --user nobody --output "$SPEC_N" > "$T/gen_n.out" 2>&1 || fail "generate --user nobody: $(cat "$T/gen_n.out")"
grep -q "name: \"$V\"" "$SPEC" || fail "root's spec has no device $V"
grep -q "name: \"$V:u65534\"" "$SPEC_N" || fail "nobody's spec has no device $V:u65534: $(cat "$SPEC_N")"
! grep -q "name: \"$V\"$" "$SPEC_N" || fail "nobody's spec names a device $V"
note "root's device $V, nobody's $V:u65534"

cp "$SPEC" "$T/root.before"
"$CTL" cdi generate --user nobody --output "$SPEC" > "$T/over.out" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "generate --user nobody over root's spec: exit $rc: $(cat "$T/over.out")"
cmp -s "$SPEC" "$T/root.before" || fail "generate --user nobody changed root's spec"
note "over root's spec: exit 2: $(cat "$T/over.out")"
yaml_n 128KiB/s
"$CTL" load "$T/nobody.yaml" > "$T/load_n.out" 2>&1 || fail "load nobody's again"
cmp -s "$SPEC" "$T/root.before" || fail "root's load of nobody's service rewrote root's spec"
grep -q "cdi: rewrote $SPEC_N" "$T/load_n.out" || fail "nobody's spec not rewritten: $(cat "$T/load_n.out")"
if nobody_loads_lib; then  # nobody's own load of her service: root's spec stays
  own=$(mktemp /tmp/bonsai-names.XXXXXX.yaml) && cleanup_hooks+=("rm -f '$own'")
  printf 'version: 1\nservices:\n  %s:\n    limits:\n      - calls: [writes]\n        rate: 256KiB/s\n' "$V" > "$own"
  chmod 644 "$own"
  setpriv --reuid=65534 --regid=65534 --clear-groups env BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" "$CTL" load "$own" \
    > "$T/load_own.out" 2>&1 || fail "nobody's own load: $(cat "$T/load_own.out")"
  cmp -s "$SPEC" "$T/root.before" || fail "nobody's own load rewrote root's spec"
  note "nobody's own load: root's spec unchanged"
fi

glibc_root bookworm
before=$(jq_stat "$V" "d['total']['calls']['write']['bytes']")
crun "$V" "$ROOT" sh -c 'echo "uid=$BONSAI_SHM_UID"; dd if=/dev/zero of=/dev/null bs=64k count=32'
rc=$(cwait "$CID")
[ "$rc" = 0 ] || fail "device $V: exit $rc: $(cat "$T/$CID.log")"
grep -q '^uid=0$' "$T/$CID.log" || fail "device $V is not root's: $(cat "$T/$CID.log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/$CID.log")
check_rate "device $V: 2 MiB at root's 4 MiB/s" $((2 * MiB)) "$secs" $((4 * MiB)) 0.75 1.25
after=$(jq_stat "$V" "d['total']['calls']['write']['bytes']")
[ $((after - before)) -ge $((2 * MiB)) ] || fail "root's segment counted $((after - before)) bytes, not 2 MiB"
crun "$V:u65534" "$ROOT" sh -c 'echo "uid=$BONSAI_SHM_UID service=$BONSAI_SERVICE"'
rc=$(cwait "$CID")
[ "$rc" = 0 ] || fail "device $V:u65534: exit $rc: $(cat "$T/$CID.log")"
grep -q "^uid=65534 service=$V\$" "$T/$CID.log" || fail "device $V:u65534 is not nobody's: $(cat "$T/$CID.log")"
note "Podman resolves both; $V is root's service (held and counted there), $V:u65534 nobody's"
"$CTL" --user nobody rm "$V" > /dev/null 2>&1 || true
exit 0
