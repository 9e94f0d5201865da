#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The container supervisor's public form, `bonsaictl sv-exec PROGRAM [ARGS...]`: the
# arguments pass as written (argv[0] is PROGRAM; `sv-exec /bin/echo hello world` prints
# `hello world`, where the internal form took the first argument as argv[0] and printed
# `world`), PROGRAM without a slash is looked up in PATH, an unknown one exits 127; the
# library's internal form `sv-exec -- PATH ARGV0 ARGS` (what processes of older
# releases run) keeps working; busybox-static's dd through the public form is held to the
# service's cap (4 MiB at writes=2MiB/s: 2 s) and counted.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
cat > "$T/s.yaml" <<YAML
version: 1
services:
  w:
    limits:
      - calls: [writes]
        rate: 2MiB/s
YAML
"$CTL" load "$T/s.yaml" > /dev/null || fail "load"
export BONSAI_SERVICE=w

out=$("$CTL" sv-exec /bin/echo hello world 2> "$T/e1") || fail "sv-exec /bin/echo: $(cat "$T/e1")"
[ "$out" = "hello world" ] || fail "sv-exec /bin/echo hello world printed '$out'"
out=$("$CTL" sv-exec echo hello world 2> "$T/e2") || fail "sv-exec echo: $(cat "$T/e2")"
[ "$out" = "hello world" ] || fail "sv-exec echo hello world (through PATH) printed '$out'"
out=$("$CTL" sv-exec -- /bin/echo echo hello world 2> "$T/e3") || fail "sv-exec -- /bin/echo: $(cat "$T/e3")"
[ "$out" = "hello world" ] || fail "the internal form sv-exec -- /bin/echo echo hello world printed '$out'"
# A program's own options are its own, not sv-exec's.
out=$("$CTL" sv-exec /bin/echo --help -- x 2> /dev/null)
[ "$out" = "--help -- x" ] || fail "sv-exec /bin/echo --help -- x printed '$out'"
rc=0
"$CTL" sv-exec bonsai-no-such-program 2> "$T/e4" || rc=$?
[ "$rc" = 127 ] && grep -q 'not found' "$T/e4" || fail "an unknown program: exit $rc, $(cat "$T/e4")"
note "sv-exec PROGRAM ARGS: arguments as written; the internal form too; unknown program 127"

BB=$(command -v busybox) || skip "busybox-static not installed (make deps)"
file -L "$BB" | grep -q 'statically linked' || skip "$BB is not static (busybox-static: make deps)"
ln -s "$BB" "$T/dd"
start=$(now_ns)
"$CTL" sv-exec "$T/dd" if=/dev/zero of=/dev/null bs=64k count=64 2> "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
secs=$(secs_since "$start")
! grep -q 'WITHOUT LIMITS\|NOT limited' "$T/dd.err" || fail "dd: $(cat "$T/dd.err")"
check_rate "busybox dd through sv-exec PROGRAM (writes=2MiB/s)" $((4 * MiB)) "$secs" $((2 * MiB)) 0.7 1.15
bytes=$(total_bytes w write)
[ "$bytes" -ge $((4 * MiB)) ] && [ "$bytes" -lt $((4 * MiB + 512)) ] || fail "the host counted $bytes bytes, not 4 MiB"
exit 0
