#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A musl image with the device (issue #47, docs/reference/containers.md, docs/reference/libc.md): a root
# holding only musl's loader and a musl program (libc_probe, as t_libc_musl's), run by
# Podman with --device bonsai.dev/service=NAME and nothing else: musl's loader takes
# /run/bonsai/$LIB/libbonsai.so literally, the musl build, and the copy of 2 MiB is
# held to the service's writes=2MiB/s (about 1 s) and counted by the host.
# timeout: 30
# parallel: no (a rate within 15%)
. "$(dirname "$0")/lib/cdi_lib.sh"

W=$(svc musl)
load_yaml "version: 1
services:
  $W:
    limits:
      - calls: [writes]
        rate: 2MiB/s"
gen_spec
R=$T/muslroot
musl_root "$R"
make_data "$R/tmp/src" 2
crun "$W" "$R" /bin/libc_probe copy /tmp/src /tmp/dst
rc=$(cwait "$CID")
[ "$rc" = 0 ] || { cat "$T/$CID.log" >&2; fail "libc_probe in the musl container exited $rc"; }
! grep -q '^bonsai\|Error' "$T/$CID.log" || fail "the musl container said: $(cat "$T/$CID.log")"
secs=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' "$T/$CID.log")
check_rate "musl copy in a container (writes=2MiB/s)" $((2 * MiB)) "$secs" $((2 * MiB)) 0.85 1.15
same_data "$R/tmp/src" "$R/tmp/dst"
bytes=$(jq_stat "$W" "d['total']['calls']['write']['bytes']")
[ "$bytes" -ge $((2 * MiB)) ] && [ "$bytes" -lt $((2 * MiB + 512)) ] || fail "the host counted $bytes bytes written, not 2 MiB"
exit 0
