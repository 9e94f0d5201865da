#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Programs LD_PRELOAD cannot reach run simply unlimited: a static binary, and a
# setuid-root copy run by an unprivileged user (AT_SECURE). The same dynamic program
# run by that user without setuid is limited (the control). Skips where impossible.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog write_bytes write_bytes_static
out=$(limited 'write=1MiB/s' "$T/static.json" "$PRE/write_bytes_static" /dev/null 8M) || fail "static program failed"
check_between "static: 8 MiB under write=1MiB/s (s)" "$(field "$out" secs)" 0 1.0

[ "$(id -u)" = 0 ] || skip "setuid part needs root (to make a setuid-root copy)"
command -v setpriv > /dev/null || skip "no setpriv"
findmnt -no OPTIONS -T "$T" 2>/dev/null | grep -qw nosuid && skip "$T is on a nosuid mount"
chmod 755 "$T"
cp "$LIB" "$T/libbonsai.so"
cp "$PRE/write_bytes" "$T/plain"
cp "$PRE/write_bytes" "$T/suid"
chmod 755 "$T/libbonsai.so" "$T/plain"
chmod 4755 "$T/suid"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$SAN_RT$T/libbonsai.so" \
  BONSAI_LIMITS='write=2MiB/s' "$@"; }
as_nobody "$T/plain" /dev/null 4M > "$T/plain.out" || skip "user 65534 cannot run programs from $T"
as_nobody "$T/suid" /dev/null 4M > "$T/suid.out" || fail "setuid copy failed"
check_rate "control: plain copy as nobody, write=2MiB/s" $((4 * MiB)) "$(field "$(cat "$T/plain.out")" secs)" $((2 * MiB))
check_between "setuid copy as nobody: 4 MiB under write=2MiB/s (s)" "$(field "$(cat "$T/suid.out")" secs)" 0 1.0
