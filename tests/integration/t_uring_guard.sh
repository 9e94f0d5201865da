#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The io_uring guard (issue #9 item 4): io_uring reads bypass every wrapper; with
# BONSAI_IO_URING=deny io_uring_setup fails with ENOSYS, the liburing program falls
# back to read() and is capped; the denial holds in an exec'd child (one filter, not
# one per exec; also a child that left the service: the kernel keeps the filter);
# `bonsaictl run --io-uring=deny` and YAML `io_uring: deny` set it; bad values are
# refused (run: exit 2) or warned about (library: allowed); a filter that cannot be
# installed is said once and the program runs on (fail open).
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog uring_read
P=$PRE/uring_read
head -c $((8 * MiB)) /dev/zero > "$T/f8" || fail "no test file"
chmod 755 "$T"; chmod 644 "$T/f8"

# Without the variable: io_uring (or skip when this kernel or container refuses it).
out=$(env LD_PRELOAD="$PRELOAD" BONSAI_LIMITS='reads=4MiB/s' "$P" "$T/f8") || fail "uring_read failed"
note "allowed: $out"
[ "$(field "$out" path)" = uring ] || skip "io_uring unavailable here ($(field "$out" init)): nothing to guard"
[ "$(field "$out" bytes)" = $((8 * MiB)) ] || fail "io_uring read short: $out"
check_between "io_uring read bypasses reads=4MiB/s (s)" "$(field "$out" secs)" 0 1.2

# deny: falls back to read(), which is capped; the exec'd child is denied too.
start=$(now_ns)
out=$(env LD_PRELOAD="$PRELOAD" BONSAI_LIMITS='reads=4MiB/s' BONSAI_IO_URING=deny "$P" "$T/f8" \
      "$P" "$T/f8" env BONSAI_LEAVE=1 "$P" "$T/f8" 2>"$T/err") || fail "uring_read (deny) failed: $(cat "$T/err")"
secs=$(secs_since "$start")
grep -q "cannot install the seccomp filter" "$T/err" && skip "seccomp refused here: $(head -n1 "$T/err")"
note "denied: $(echo "$out" | tr '\n' '|')"
[ -s "$T/err" ] && fail "unexpected stderr: $(cat "$T/err")"
[ "$(echo "$out" | wc -l)" = 3 ] || fail "expected 3 lines (process, child, left child): $out"
i=0
while read -r line; do
  i=$((i + 1))
  [ "$(field "$line" path)" = read ] || fail "process $i used io_uring under deny: $line"
  [ "$(field "$line" init)" = ENOSYS ] || fail "process $i: io_uring_queue_init not ENOSYS: $line"
  [ "$(field "$line" bytes)" = $((8 * MiB)) ] || fail "process $i read short: $line"
  [ "$(field "$line" filters)" = -1 ] || [ "$(field "$line" filters)" = 1 ] ||
    fail "process $i has $(field "$line" filters) seccomp filters (one, inherited, expected): $line"
done <<< "$out"
check_between "8 MiB read() fallback at reads=4MiB/s (s)" "$(field "$(echo "$out" | head -n1)" secs)" 1.5 15
check_between "the exec'd child is capped too (s)" "$(field "$(echo "$out" | sed -n 2p)" secs)" 1.5 15
check_between "all three (s)" "$secs" 3 40

# Bad value: warned once, io_uring allowed.
out=$(env LD_PRELOAD="$PRELOAD" BONSAI_IO_URING=maybe "$P" "$T/f8" 2>"$T/err") || fail "uring_read (bad value) failed"
[ "$(field "$out" path)" = uring ] || fail "a bad BONSAI_IO_URING denied io_uring: $out"
grep -q "BONSAI_IO_URING='maybe' is neither deny nor allow" "$T/err" || fail "no warning for a bad value: $(cat "$T/err")"
[ "$(wc -l < "$T/err")" = 1 ] || fail "warned more than once: $(cat "$T/err")"

# bonsaictl run --io-uring=deny (capped), --io-uring allow, a bad value (exit 2).
out=$("$CTL" run -s uring -l 'reads=4MiB/s' --io-uring=deny -- "$P" "$T/f8") || fail "run --io-uring=deny failed"
note "run --io-uring=deny: $out"
[ "$(field "$out" path)" = read ] || fail "run --io-uring=deny: io_uring used: $out"
check_between "run --io-uring=deny, 8 MiB at reads=4MiB/s (s)" "$(field "$out" secs)" 1.5 15
out=$(BONSAI_IO_URING=deny "$CTL" run -s uring --io-uring allow -- "$P" "$T/f8") || fail "run --io-uring allow failed"
[ "$(field "$out" path)" = uring ] || fail "run --io-uring allow did not override an exported deny: $out"
"$CTL" run -s uring --io-uring=off -- true 2>"$T/err"; rc=$?
[ $rc = 2 ] || fail "run --io-uring=off: exit $rc (2 expected)"
grep -q "bad --io-uring 'off'" "$T/err" || fail "no clear error for --io-uring=off: $(cat "$T/err")"

# YAML io_uring: deny (and a bad value: FILE:LINE:COL, exit 2).
printf 'version: 1\nservices:\n  uring:\n    io_uring: deny\n' > "$T/s.yaml"
out=$("$CTL" run -c "$T/s.yaml" -s uring -- "$P" "$T/f8") || fail "run -c (io_uring: deny) failed"
[ "$(field "$out" path)" = read ] || fail "YAML io_uring: deny not applied: $out"
out=$("$CTL" run -c "$T/s.yaml" -s uring --io-uring=allow -- "$P" "$T/f8") || fail "run -c --io-uring=allow failed"
[ "$(field "$out" path)" = uring ] || fail "--io-uring=allow does not override the file: $out"
printf 'version: 1\nservices:\n  uring:\n    io_uring: no\n' > "$T/bad.yaml"
"$CTL" run -c "$T/bad.yaml" -s uring -- true 2>"$T/err"; rc=$?
[ $rc = 2 ] || fail "bad io_uring in YAML: exit $rc (2 expected)"
grep -q "bad.yaml:4:15: bad io_uring 'no'" "$T/err" || fail "no FILE:LINE:COL for a bad io_uring: $(cat "$T/err")"

# Another user (no CAP_SYS_ADMIN): the filter needs no_new_privs, which is set. (Root,
# and a checkout nobody can reach: not under a private directory such as mktemp -d.)
if nobody_loads_lib; then
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups env LD_PRELOAD="$PRELOAD" BONSAI_IO_URING=deny "$P" "$T/f8") ||
    fail "uring_read as nobody failed"
  note "as nobody: $out"
  [ "$(field "$out" path)" = read ] || fail "as nobody: io_uring used under deny: $out"
  [ "$(field "$out" nnp)" = 1 ] || fail "as nobody: no_new_privs not set: $out"
else
  note "not root, or user nobody cannot read $LIB: the other-user (no_new_privs) case is not run"
fi

# Fail open: seccomp refused (strace injects EPERM): said once, io_uring stays, the program runs.
if command -v strace >/dev/null 2>&1 && strace -f -o /dev/null true 2>/dev/null; then
  out=$(strace -f -o /dev/null -e inject=seccomp:error=EPERM -e inject=prctl:error=EPERM \
        env LD_PRELOAD="$PRELOAD" BONSAI_IO_URING=deny "$P" "$T/f8" 2>"$T/err") || fail "uring_read under a refused seccomp failed"
  [ "$(field "$out" bytes)" = $((8 * MiB)) ] || fail "fail-open read short: $out"
  grep -q "BONSAI_IO_URING=deny: cannot install the seccomp filter" "$T/err" || fail "refusal not said: $(cat "$T/err")"
  [ "$(grep -c bonsai "$T/err")" = 1 ] || fail "refusal said more than once: $(cat "$T/err")"
else
  note "strace cannot trace here: the fail-open case is not run"
fi
exit 0
