#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a bonsai.dev/service device mounts from the host: the service's segment (its link
# in the spec writer's folder), the library's builds and the supervisor, one static
# program (build/cdi/bonsaictl), and no other file: no host library, no loader (the
# supervisor once took bonsaictl's whole closure, ~20 libraries, into every container).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
[ -x "$BONSAI_BUILD/cdi/bonsaictl" ] || fail "no $BONSAI_BUILD/cdi/bonsaictl (make builds it)"
file -L "$BONSAI_BUILD/cdi/bonsaictl" | grep -q 'statically linked' ||
  fail "the supervisor for containers is not static: $(file -L "$BONSAI_BUILD/cdi/bonsaictl")"
cleanup_hooks+=('rm -rf /dev/shm/${BONSAI_SHM_PREFIX}bonsai-cdi.*')
cat > "$T/s.yaml" <<YAML
version: 1
services:
  m:
    limits:
      - calls: [writes]
        rate: 2MiB/s
YAML
"$CTL" load "$T/s.yaml" > /dev/null || fail "load"
"$CTL" cdi generate --output - > "$T/spec.yaml" 2> "$T/gen.err" || fail "cdi generate: $(cat "$T/gen.err")"
[ ! -s "$T/gen.err" ] || fail "cdi generate said: $(cat "$T/gen.err")"
sed -n 's/^ *- hostPath: "\(.*\)"$/\1/p' "$T/spec.yaml" > "$T/hosts"
n=0
while read -r h; do
  n=$((n + 1))
  case $h in
    "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-cdi.$(id -u)/${BONSAI_SHM_PREFIX}bonsai.$(id -u).m") ;;  # the segment's link
    */libbonsai.so) cmp -s "$h" "$(readlink -f "$LIB")" || cmp -s "$h" "$BONSAI_BUILD/musl/libbonsai.so" ||
      fail "a libbonsai.so that is not the build's: $h" ;;
    */cdi/bonsaictl) file -L "$h" | grep -q 'statically linked' || fail "the supervisor mounted is not static: $h" ;;
    *) fail "the device mounts a host file that is not bonsai's: $h" ;;
  esac
done < "$T/hosts"
[ "$n" -ge 3 ] || fail "only $n mounts: $(cat "$T/hosts")"
grep -q 'containerPath: "/run/bonsai/sv/bonsaictl"' "$T/spec.yaml" || fail "no supervisor mounted"
! grep -q '/run/bonsai/sv/lib' "$T/spec.yaml" || fail "the spec still mounts libraries under /run/bonsai/sv/lib"
note "$n host files mounted, all bonsai's: $(tr '\n' ' ' < "$T/hosts")"
exit 0
