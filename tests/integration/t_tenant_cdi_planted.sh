#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Another user's files under /dev/shm never reach a spec (docs/reference/containers.md): user
# nobody puts a symbolic link to a root-only file at the name of a root service's
# segment and at the host segment's, and a file of hers at another service name of
# root's. `cdi generate` makes a device of root's real service only, says why not of the
# others, and mounts no host segment: a container with the device finds no byte of the
# root-only file in its /dev/shm. Then root removes the segment by hand (no `bonsaictl
# rm`, so the spec is not rewritten) and nobody puts her link at its name: the device
# still mounts the file it was made of, never her link's target.
# timeout: 120
. "$(dirname "$0")/lib/cdi_lib.sh"
need_cmd setpriv
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

P=$BONSAI_SHM_PREFIX
V=$(svc v)
load_yaml "version: 1
services:
  $V:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
word=TOPSECRET$$
printf '%s\n' "$word" > "$T/secret" && chmod 600 "$T/secret" || fail "secret"
as_nobody ln -s "$T/secret" "/dev/shm/${P}bonsai.0.${P}evil" || fail "nobody's link"
as_nobody ln -s "$T/secret" "/dev/shm/${P}bonsai-host.0" || fail "nobody's link at the host segment"
as_nobody sh -c "umask 077; head -c 4096 /dev/zero > /dev/shm/${P}bonsai.0.${P}planted" || fail "nobody's file"
"$CTL" cdi generate --output "$SPEC" > "$T/gen.out" 2> "$T/gen.err" || fail "cdi generate: $(cat "$T/gen.err")"
grep -q "wrote $SPEC: 1 device" "$T/gen.out" || fail "generate said: $(cat "$T/gen.out")"
for s in evil planted; do
  grep -q "no device for '${P}$s'" "$T/gen.err" || fail "generate did not refuse $s: $(cat "$T/gen.err")"
  ! grep -q "name: \"${P}$s\"" "$SPEC" || fail "a device of nobody's $s: $(cat "$SPEC")"
done
! grep -q "bonsai-host" "$SPEC" || fail "the spec mounts the host segment"
note "$(cat "$T/gen.err")"

glibc_root bookworm
probe='for f in /dev/shm/*; do cat "$f" 2>/dev/null; done | grep -c '"$word"' || true'
crun "$V" "$ROOT" sh -c "$probe"
rc=$(cwait "$CID")
[ "$rc" = 0 ] || fail "container: exit $rc: $(cat "$T/$CID.log")"
[ "$(tail -n1 "$T/$CID.log")" = 0 ] || fail "the container read the root-only file: $(cat "$T/$CID.log")"
note "a container with the device: 0 bytes of the root-only file in its /dev/shm"

rm -f "/dev/shm/${P}bonsai.0.$V" || fail "rm the segment"
as_nobody ln -s "$T/secret" "/dev/shm/${P}bonsai.0.$V" || fail "nobody's link at the removed segment's name"
crun "$V" "$ROOT" sh -c "$probe"
rc=$(cwait "$CID")
[ "$rc" = 0 ] || fail "container after the swap: exit $rc: $(cat "$T/$CID.log")"
[ "$(tail -n1 "$T/$CID.log")" = 0 ] || fail "after the swap the container read the root-only file: $(cat "$T/$CID.log")"
note "nobody's link at the removed segment's name: the device still mounts the segment it was made of"
exit 0
