# SPDX-License-Identifier: MIT
# Helpers of the t_cdi_* tests (issue #47, docs/reference/containers.md): Podman with the
# settings this kind of machine needs, a CDI spec of this test's services in a file of
# its own, containers named after the test, all removed at the end. Roots are the
# Debian roots of the libc tests (lib/libc_lib.sh: mmdebstrap, cached in the build
# dir), run with `podman run --rootfs`. Sourced, never run.
# ctl_lib first (bonsaictl, build_gocat): what this file defines again below is its own.
. "$(dirname "${BASH_SOURCE[0]}")/ctl_lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/libc_lib.sh"
[ -x "$BONSAI_BUILD/cdi/bonsaictl" ] || fail "no $BONSAI_BUILD/cdi/bonsaictl (make builds it)"
[ "$(id -u)" = 0 ] || skip "Podman with CDI devices from /var/run/cdi: run as root (rootless: docs/reference/containers.md)"
need_cmd podman runc

# Podman here: runc, cgroupfs, no network, and limits the sandbox can grant (it cannot
# raise RLIMIT_NOFILE, which Podman's default would).
export CONTAINERS_CONF=$T/containers.conf
cat > "$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "none"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

# This test's spec: a file of its own in /var/run/cdi (never the default bonsai.yaml,
# which belongs to the machine's user), removed at the end with the segments.
SPEC=/var/run/cdi/${BONSAI_SHM_PREFIX}bonsai.yaml
cleanup_hooks+=("rm -f '$SPEC'")
cleanup_hooks+=('for f in /dev/shm/${BONSAI_SHM_PREFIX}bonsai*; do [ -f "$f" ] && rm -f "$f"; done')
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai-cdi.*')
# Container names: the prefix and a number; all removed at the end.
CN=0
cleanup_hooks+=('for i in $(seq 1 $CN); do podman rm -f -t 0 "${BONSAI_SHM_PREFIX}c$i" > /dev/null 2>&1; done')

# svc NAME: a service name no other test uses (CDI device names are global).
svc() { echo "${BONSAI_SHM_PREFIX}$1"; }

# load_yaml TEXT: `bonsaictl load` of a file holding TEXT.
load_yaml() {
  printf '%s\n' "$1" > "$T/services.yaml"
  "$CTL" load "$T/services.yaml" > "$T/load.out" 2>&1 || { cat "$T/load.out" >&2; fail "load"; }
}

# gen_spec: this test's spec, generated.
gen_spec() {
  "$CTL" cdi generate --output "$SPEC" > "$T/gen.out" 2> "$T/gen.err" || { cat "$T/gen.err" >&2; fail "cdi generate"; }
  [ ! -s "$T/gen.err" ] || fail "cdi generate said: $(cat "$T/gen.err")"
}

# crun SERVICE ROOT ARGS...: podman run, detached, of ARGS (the command) in ROOT with
# the service's device; CID := the container's name. CRUN_OPTS: more options of run
# (--runtime, --user).
CRUN_OPTS=()
crun() {
  local service=$1 root=$2
  shift 2
  CN=$((CN + 1))
  CID=${BONSAI_SHM_PREFIX}c$CN
  podman run -d --name "$CID" "${CRUN_OPTS[@]}" --device "bonsai.dev/service=$service" --rootfs "$root" "$@" \
    > "$T/$CID.id" 2> "$T/$CID.err" ||
    { cat "$T/$CID.err" >&2; fail "podman run $*"; }
}

# cwait NAME: waits for container NAME to end; its exit status, output in $T/NAME.log.
cwait() {
  local rc
  rc=$(podman wait "$1" 2> /dev/null | tail -n1)
  podman logs "$1" > "$T/$1.log" 2>&1
  echo "${rc:-255}"
}

# chost_pid NAME: the host pid of container NAME's first process.
chost_pid() { podman inspect --format '{{.State.Pid}}' "$1"; }

# bonsai's OCI runtime in front of runc (docs/reference/containers.md).
OCI_RT=$BONSAI_BUILD/bonsai-oci-runtime

ATTACH_SECS=10  # ctl_lib's wait_attached: a container starts in ~1 s, more on a loaded machine
