#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsai-oci-runtime's edit of a bundle, without an engine (docs/reference/containers.md): for
# `create` of a config.json with a device's variables and segment mount it hands the
# segment in as the next preserved descriptor (after --preserve-fds N: number 3+N,
# BONSAI_SHM_FD names it, --preserve-fds becomes N+1), puts a static command behind the
# supervisor (`BONSAI_CTL sv-exec CMD ARGS`, found through the container's PATH inside its
# root) and leaves a dynamic one alone; the real runtime gets the other arguments as
# given. A private file of root's that is no segment, named by the mount, is refused (no
# descriptor); a container without the device and every other command pass unchanged.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
RT=$BONSAI_BUILD/bonsai-oci-runtime
[ -x "$RT" ] || fail "no $RT (make builds it)"
[ "$(id -u)" = 0 ] || skip "the runtime hands root's segment in: run as root"
BB=$(command -v busybox) && file -L "$BB" | grep -q 'statically linked' || skip "busybox-static not installed (make deps)"
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai-cdi.*')
cat > "$T/s.yaml" <<YAML
version: 1
services:
  e:
    limits:
      - calls: [writes]
        rate: 2MiB/s
YAML
"$CTL" load "$T/s.yaml" > /dev/null || fail "load"
seg=$(seg_file e)
# The real runtime: says its arguments and where its descriptor 5 leads.
cat > "$T/fake-runc" <<'SH'
#!/bin/sh
echo "ARGS: $*"
echo "FD5: $(readlink /proc/$$/fd/5)"
SH
chmod +x "$T/fake-runc"
export BONSAI_OCI_RUNTIME=$T/fake-runc
mkdir -p "$T/b/rootfs/usr/bin" "$T/b/rootfs/bin"
cp "$BB" "$T/b/rootfs/usr/bin/app"
cp /bin/true "$T/b/rootfs/bin/dyn"
# bundle SOURCE CMD: a config.json whose segment mount's source is SOURCE.
bundle() {
  python3 - "$1" "$2" "$BONSAI_SHM_PREFIX" "$(basename "$seg")" > "$T/b/config.json" <<'PY'
import json, sys
src, cmd, prefix, name = sys.argv[1:]
print(json.dumps({"ociVersion": "1.0.2", "root": {"path": "rootfs"},
  "process": {"args": [cmd, "-x"], "cwd": "/", "env": ["PATH=/usr/bin:/bin", "BONSAI_SERVICE=e", "BONSAI_SHM_UID=0",
    "BONSAI_SHM_PREFIX=" + prefix, "BONSAI_CTL=/run/bonsai/sv/bonsaictl"]},
  "mounts": [{"destination": "/dev/shm/" + name, "source": src, "type": "bind"},
             {"destination": "/run/bonsai/sv/bonsaictl", "source": "/x", "type": "bind"}]}))
PY
}
cfg() { python3 -c "import json, sys; c = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$T/b/config.json" "$1"; }

bundle "$seg" app
"$RT" --root /x --log /dev/null create --bundle "$T/b" --preserve-fds 2 --pid-file /p cid > "$T/out" 2> "$T/err" ||
  fail "runtime: $(cat "$T/err")"
grep -qx 'ARGS: --root /x --log /dev/null create --bundle '"$T/b"' --preserve-fds 3 --pid-file /p cid' "$T/out" ||
  fail "runc got: $(cat "$T/out")"
grep -qx "FD5: $seg" "$T/out" || fail "descriptor 5 (3 + 2 preserved) is not the segment: $(cat "$T/out")"
[ "$(cfg "c['process']['args']")" = "['/run/bonsai/sv/bonsaictl', 'sv-exec', 'app', '-x']" ] ||
  fail "static command: $(cfg "c['process']['args']")"
[ "$(cfg "[e for e in c['process']['env'] if e.startswith('BONSAI_SHM_FD=')]")" = "['BONSAI_SHM_FD=5']" ] ||
  fail "env: $(cfg "c['process']['env']")"
[ ! -s "$T/err" ] || fail "runtime said: $(cat "$T/err")"
note "create: the segment at fd 5, --preserve-fds 3, the static app behind sv-exec"

bundle "$seg" dyn
"$RT" create --bundle="$T/b" cid > "$T/out" 2> "$T/err" || fail "runtime: $(cat "$T/err")"
grep -qx "ARGS: create --preserve-fds 1 --bundle=$T/b cid" "$T/out" || fail "runc got: $(cat "$T/out")"
[ "$(cfg "c['process']['args']")" = "['dyn', '-x']" ] || fail "dynamic command changed: $(cfg "c['process']['args']")"

# Root's private file that is no segment: no descriptor, said once.
head -c 65536 /dev/zero > "$T/private" && chmod 600 "$T/private"
bundle "$T/private" dyn
"$RT" create --bundle "$T/b" cid > "$T/out" 2> "$T/err" || fail "runtime: $(cat "$T/err")"
grep -qx "ARGS: create --bundle $T/b cid" "$T/out" || fail "runc got: $(cat "$T/out")"
grep -q 'is not a segment of uid 0' "$T/err" || fail "runtime said: $(cat "$T/err")"
! grep -q BONSAI_SHM_FD "$T/b/config.json" || fail "a descriptor of a file that is no segment"
note "a private file that is no segment: $(cat "$T/err")"

# Other commands, and a container without the device: unchanged.
"$RT" state cid > "$T/out" 2>&1 && grep -qx 'ARGS: state cid' "$T/out" || fail "state: $(cat "$T/out")"
echo '{"process": {"args": ["app"], "env": ["PATH=/usr/bin"]}, "root": {"path": "rootfs"}}' > "$T/b/config.json"
cp "$T/b/config.json" "$T/plain.json"
"$RT" create --bundle "$T/b" cid > "$T/out" 2>&1 && grep -qx "ARGS: create --bundle $T/b cid" "$T/out" ||
  fail "no device: $(cat "$T/out")"
cmp -s "$T/b/config.json" "$T/plain.json" || fail "a container without the device had its config.json changed"
exit 0
