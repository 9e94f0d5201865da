#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `bonsaictl cdi generate` (issue #47, docs/reference/containers.md): a CDI spec of kind
# bonsai.dev/service with one device per service of the user under the prefix (its
# segment mounted read-write at its own name in /dev/shm), the library's $LIB layout
# and the supervisor mounted read-only, LD_PRELOAD and BONSAI_* set; `-` prints it;
# `load` adds the device of a new service to the spec it wrote and `rm` takes it out
# (and the file, with the last service); no services, exit 1; bad arguments, exit 2.
# A user namespace of another user than the service's owner is refused in one line. No container runs here (t_cdi_dd does).
# timeout: 30
. "$(dirname "$0")/lib/libc_lib.sh"
CTL=$BONSAI_BUILD/bonsaictl
[ "$(id -u)" = 0 ] || skip "writes /var/run/cdi: run as root"
SPEC=/var/run/cdi/${BONSAI_SHM_PREFIX}bonsai.yaml
cleanup_hooks+=("rm -f '$SPEC'")
cleanup_hooks+=('for f in /dev/shm/${BONSAI_SHM_PREFIX}bonsai*; do [ -f "$f" ] && rm -f "$f"; done')
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai-cdi.*')
P=$BONSAI_SHM_PREFIX
a=${P}a b=${P}b c=${P}c

"$CTL" cdi generate --output - > "$T/none.out" 2> "$T/none.err" && fail "generate with no services succeeded"
grep -q 'no services' "$T/none.err" || fail "generate with no services said: $(cat "$T/none.err")"
"$CTL" cdi > /dev/null 2>&1; [ $? = 2 ] || fail "cdi without a subcommand: not exit 2"
"$CTL" cdi generate --bogus > /dev/null 2>&1; [ $? = 2 ] || fail "cdi generate --bogus: not exit 2"

yaml() {  # SERVICE...
  echo "version: 1"; echo "services:"
  for s in "$@"; do printf '  %s:\n    limits:\n      - calls: [writes]\n        rate: 2MiB/s\n' "$s"; done
}
yaml "$a" "$b" > "$T/ab.yaml"
"$CTL" load "$T/ab.yaml" > /dev/null || fail "load"
"$CTL" cdi generate --output - > "$T/spec.out" 2> "$T/spec.err" || fail "generate -: $(cat "$T/spec.err")"
[ ! -s "$T/spec.err" ] || fail "generate said: $(cat "$T/spec.err")"
python3 - "$T/spec.out" "$a" "$b" "$P" "$(id -u)" << 'PY' || fail "the spec: $(cat "$T/spec.out")"
import sys
text = open(sys.argv[1]).read()
path, a, b, prefix, uid = sys.argv[1:]
def has(s):
    if s not in text:
        sys.exit(f"missing: {s}")
has('cdiVersion: "0.5.0"')
has("kind: bonsai.dev/service")
for s in (a, b):
    has(f'- name: "{s}"')
    has(f'"BONSAI_SERVICE={s}"')
    seg = f"/dev/shm/{prefix}bonsai.{uid}.{s}"
    link = f"/dev/shm/{prefix}bonsai-cdi.{uid}/{prefix}bonsai.{uid}.{s}"
    has(f'hostPath: "{link}"\n          containerPath: "{seg}"\n          options: ["bind", "rw", "nosuid", "nodev", "noexec"]')
    import os
    if os.stat(link).st_ino != os.stat(seg).st_ino:
        sys.exit(f"{link} is not {seg}")
if "bonsai-host" in text:
    sys.exit("the host segment is mounted")
has('"LD_PRELOAD=/run/bonsai/$LIB/libbonsai.so"')
has(f'"BONSAI_SHM_UID={uid}"')
has(f'"BONSAI_SHM_PREFIX={prefix}"')
has('"BONSAI_CTL=/run/bonsai/sv/bonsaictl"')
for d in ("$LIB", "lib/x86_64-linux-gnu", "lib64", "lib"):
    has(f'containerPath: "/run/bonsai/{d}/libbonsai.so"\n      options: ["bind", "ro", "nosuid", "nodev"]')
has('containerPath: "/run/bonsai/sv/bonsaictl"')
if "/run/bonsai/sv/lib" in text:  # the supervisor is one static program (t_cdi_spec_mounts)
    sys.exit("host libraries mounted for the supervisor")
if text.count("- name: ") != 2:
    sys.exit("not two devices")
PY
note "generate -: two devices, the segments rw (links to them), the library and the supervisor ro, no host segment"

"$CTL" cdi generate --output "$SPEC" > "$T/gen.out" || fail "generate --output"
grep -q "wrote $SPEC: 2 devices" "$T/gen.out" || fail "generate said: $(cat "$T/gen.out")"
[ "$(stat -c %a "$SPEC")" = 644 ] || fail "$SPEC is not mode 644"
yaml "$a" "$b" "$c" > "$T/abc.yaml"
"$CTL" load "$T/abc.yaml" > "$T/load.out" || fail "load abc"
grep -q "cdi: rewrote $SPEC (3 devices)" "$T/load.out" || fail "load said: $(cat "$T/load.out")"
grep -q "name: \"$c\"" "$SPEC" || fail "load did not add $c's device"
"$CTL" rm "$a" > "$T/rm.out" || fail "rm"
grep -q "cdi: rewrote $SPEC (2 devices)" "$T/rm.out" || fail "rm said: $(cat "$T/rm.out")"
! grep -q "name: \"$a\"" "$SPEC" || fail "rm left $a's device"
[ ! -e "/dev/shm/${P}bonsai-cdi.0/${P}bonsai.0.$a" ] || fail "rm left the link to $a's segment"
"$CTL" rm "$b" "$c" > "$T/rm2.out" || fail "rm b c"
grep -q "cdi: removed $SPEC (no services left)" "$T/rm2.out" || fail "rm said: $(cat "$T/rm2.out")"
[ ! -e "$SPEC" ] || fail "$SPEC left with no services"
note "load adds a device, rm takes it out, the last rm removes the file"

# A user namespace of another user than the service's owner (a rootless container of
# someone else; t_cdi_rootless has the owner's): refused in one line, the program runs.
if setpriv --reuid=65534 --regid=65534 --clear-groups unshare -r true 2> /dev/null && nobody_loads_lib; then
  yaml "$a" > "$T/a.yaml"
  "$CTL" load "$T/a.yaml" > /dev/null || fail "load a"
  setpriv --reuid=65534 --regid=65534 --clear-groups unshare -r env LD_PRELOAD="$LIB" BONSAI_SERVICE="$a" \
    BONSAI_SHM_UID=0 dd if=/dev/zero of=/dev/null count=1 status=none 2> "$T/userns.err" || fail "dd in a user namespace"
  grep -q 'from this user namespace (a rootless container joins only a service of the user it runs as' "$T/userns.err" ||
    fail "in another user's user namespace: $(cat "$T/userns.err")"
  note "another user's user namespace: $(cat "$T/userns.err")"
else
  note "no user namespaces for nobody here: the refusal is not checked"
fi
exit 0
