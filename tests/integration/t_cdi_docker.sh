#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Docker without CDI (Debian's docker.io 20.10): `bonsaictl cdi docker-args NAME` prints
# the docker run options that do what the device does (shell words); a dockerd of this
# test's own (its socket, data and exec roots, no network, vfs) runs a bookworm root
# imported with `docker import`, and dd of 8 MiB under writes=2MiB/s in it takes ~4 s
# and is counted by the host; with bonsai-oci-runtime added as a runtime of that dockerd
# (--add-runtime), dd as uid 1000 is capped and counted too. Skips with a SKIP line if
# dockerd cannot start here.
# timeout: 240
# parallel: no (dd's time within 10%; dockerd and vfs copies load the machine)
. "$(dirname "$0")/lib/cdi_lib.sh"
need_cmd dockerd
DOCKER=/usr/bin/docker  # Debian's client, of the daemon's version (another may be first in PATH)
[ -x "$DOCKER" ] || DOCKER=$(command -v docker) || skip "no docker client (docker.io: make deps)"
[ -x "$OCI_RT" ] || fail "no $OCI_RT (make builds it)"

W=$(svc dock)
load_yaml "version: 1
services:
  $W:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
# The words: an option per mount and variable, each a word of its own.
"$CTL" cdi docker-args "$W" > "$T/args" 2> "$T/args.err" || fail "cdi docker-args: $(cat "$T/args.err")"
[ ! -s "$T/args.err" ] || fail "cdi docker-args said: $(cat "$T/args.err")"
eval "words=($(cat "$T/args"))"
note "docker-args: ${#words[@]} words: $(cat "$T/args")"
printf '%s\n' "${words[@]}" | grep -qx -- "--env=LD_PRELOAD=/run/bonsai/\$LIB/libbonsai.so" || fail "no LD_PRELOAD word: $(cat "$T/args")"
printf '%s\n' "${words[@]}" | grep -qx -- "--env=BONSAI_SERVICE=$W" || fail "no BONSAI_SERVICE word"
rc=0
"$CTL" cdi docker-args "${BONSAI_SHM_PREFIX}nosuch" > /dev/null 2> "$T/none.err" || rc=$?
[ "$rc" = 1 ] && grep -q "no service" "$T/none.err" || fail "an unknown service: exit $rc, $(cat "$T/none.err")"

glibc_root bookworm
# A dockerd of this test's own: a short folder (a socket path is at most 107 bytes).
D=$(mktemp -d /tmp/bonsai-dockerd.XXXXXX) || fail "mktemp"
dockerd -H "unix://$D/sock" --data-root "$D/data" --exec-root "$D/exec" --pidfile "$D/pid" --iptables=false \
  --ip6tables=false --bridge=none --storage-driver=vfs --add-runtime "bonsai=$OCI_RT" > "$D/log" 2>&1 &
dpid=$!
# Stopped first (it stops its containerd), then what it mounted (its data root on itself), then the folder.
cleanup_hooks+=("kill $dpid 2> /dev/null; for i in \$(seq 1 150); do kill -0 $dpid 2> /dev/null || break; sleep 0.1; done")
cleanup_hooks+=("grep -o ' $D[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l; rm -rf '$D'")
dk() { "$DOCKER" -H "unix://$D/sock" "$@"; }
up=
for _ in $(seq 1 150); do
  dk version > /dev/null 2>&1 && { up=1; break; }
  kill -0 "$dpid" 2> /dev/null || break
  sleep 0.2
done
[ -n "$up" ] || skip "dockerd cannot start here: $(grep -m1 -iE 'failed|error' "$D/log" || tail -n1 "$D/log")"
IMG=bonsai-test-bookworm:${BONSAI_SHM_PREFIX%.}
tar -C "$ROOT" -c . | dk import - "$IMG" > /dev/null 2> "$T/import.err" || fail "docker import: $(cat "$T/import.err")"
dk run --rm --network none "${words[@]}" "$IMG" dd if=/dev/zero of=/dev/null bs=64k count=128 > "$T/dd.log" 2>&1 ||
  fail "docker run: $(cat "$T/dd.log")"
! grep -q 'bonsai' "$T/dd.log" || fail "dd said: $(cat "$T/dd.log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/dd.log")
check_rate "dd of 8 MiB in a Docker container through cdi docker-args (writes=2MiB/s)" $((8 * MiB)) "$secs" $((2 * MiB)) 0.9 1.1
bytes=$(total_bytes "$W" write)
[ "$bytes" -ge $((8 * MiB)) ] && [ "$bytes" -lt $((8 * MiB + 4096)) ] || fail "the host counted $bytes bytes, not 8 MiB"

# Another user than the segment's, through bonsai-oci-runtime as a runtime of Docker's:
# the same flags, the segment handed in as a descriptor.
dk run --rm --network none --runtime bonsai --user 1000:1000 "${words[@]}" "$IMG" \
  dd if=/dev/zero of=/dev/null bs=64k count=64 > "$T/dd2.log" 2>&1 || fail "docker run --runtime bonsai: $(cat "$T/dd2.log")"
! grep -q 'bonsai' "$T/dd2.log" || fail "dd as uid 1000 said: $(cat "$T/dd2.log")"
secs=$(sed -n 's/.* copied, \([0-9.]*\) s,.*/\1/p' "$T/dd2.log")
check_rate "dd of 4 MiB as uid 1000 in Docker with --runtime bonsai (writes=2MiB/s)" $((4 * MiB)) "$secs" $((2 * MiB)) 0.9 1.1
bytes=$(total_bytes "$W" write)
[ "$bytes" -ge $((12 * MiB)) ] && [ "$bytes" -lt $((12 * MiB + 8192)) ] || fail "the host counted $bytes bytes, not 12 MiB"
exit 0
