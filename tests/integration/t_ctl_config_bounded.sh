#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Config input strict and bounded (issue 8, items 9 and 12): `check /dev/zero` and
# `run -c /dev/zero` end with exit 2 at once (size bound) instead of hanging; a key
# twice and a second document are errors with FILE:LINE:COL; `check-limits` exists and
# refuses an option given twice; every call name may have a rule of its own.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
CTL=$BONSAI_BUILD/bonsaictl
expect_error() {  # expect_error WHAT TEXT CMD...: exit 2 within 20 s, stderr contains TEXT
  local what=$1 text=$2 rc
  shift 2
  timeout 20 "$@" >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 2 ] || fail "$what: exit $rc, not 2 (124: hung): $(cat "$T/err")"
  grep -qF -- "$text" "$T/err" || fail "$what: stderr lacks '$text': $(cat "$T/err")"
  note "$what: $(head -n1 "$T/err")"
}
expect_error "check /dev/zero" "more than 4194304 bytes" "$CTL" check /dev/zero
expect_error "run -c /dev/zero" "more than 4194304 bytes" "$CTL" run -c /dev/zero -s s96 -- true
printf 'version: 1\nservices:\n  web:\n    limits:\n      - calls: [read]\n        rate: 1MB/s\n        rate: 2MB/s\n' > "$T/dup.yaml"
expect_error "rate twice" "dup.yaml:7:9: duplicate key 'rate'" "$CTL" check "$T/dup.yaml"
printf 'version: 1\nservices:\n  web:\n    limits: []\n    limits: []\n' > "$T/dup2.yaml"
expect_error "limits twice" "dup2.yaml:5:5: duplicate key 'limits'" "$CTL" check "$T/dup2.yaml"
printf 'version: 1\nservices: {}\n---\nversion: 1\nservices: {}\n' > "$T/multi.yaml"
expect_error "two documents" "multi.yaml:3:1: a second YAML document" "$CTL" check "$T/multi.yaml"
expect_error "check-limits fd twice" "option 'fd' given twice" "$CTL" check-limits 'write=1MiB/s:fd=socket:fd=file'
out=$("$CTL" check-limits 'reads=10485760B/s') || fail "check-limits refused a valid string"
[ "$out" = "reads=10MiB/s" ] || fail "check-limits printed '$out'"
# One rule per call name, every call name: all accepted and applied (not unlimited).
all=$(python3 -c '
names = "read pread readv preadv recv recvfrom recvmsg recvmmsg write pwrite writev pwritev send sendto sendmsg sendmmsg sendfile splice vmsplice tee copy_file_range fread fwrite open openat creat close connect accept accept4 fsync fdatasync unlink unlinkat rename mkdir".split()
print(",".join(n + "=1000000/s" if n not in ("write",) else "write=1MiB/s" for n in names))')
"$CTL" check-limits "$all" >/dev/null || fail "one rule per call name refused: $("$CTL" check-limits "$all" 2>&1)"
need_cmd dd
s=$(now_ns)
env LD_PRELOAD="$PRELOAD" BONSAI_LIMITS="$all" dd if=/dev/zero of=/dev/null bs=64k count=32 status=none 2>"$T/err" ||
  fail "dd failed: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "the library complained: $(cat "$T/err")"
check_between "2 MiB at write=1MiB/s (s)" "$(secs_since "$s")" 1.5 10
