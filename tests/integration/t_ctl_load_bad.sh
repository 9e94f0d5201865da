#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bonsaictl load/check (issue 3): a valid file creates its services; a bad one is
# reported as FILE:LINE:COL, exits 2 and changes nothing (limits and the set of
# segments stay as they were); run warns when a program cannot be limited.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd python3

cat > "$T/good.yaml" <<'YAML'
version: 1
services:
  alpha:
    limits:
      - calls: [reads]
        rate: 10MiB/s
  beta:
    scope: service
    limits:
      - calls: [write, send]
        rate: 1MB/s
YAML
cat > "$T/bad.yaml" <<'YAML'
version: 1
services:
  alpha:
    limits:
      - calls: [read]
        rate: 99MiB/s
  gamma:
    limits:
      - calls: [wirte]
        rate: 1MB/s
      - calls: [send]
        rate: 5Mb/s
YAML
"$CTL" check "$T/good.yaml" || fail "check of a good file failed"
"$CTL" load "$T/good.yaml" || fail "load of a good file failed"
before=$("$CTL" ls --json)
note "$before"
"$CTL" check "$T/bad.yaml" 2> "$T/err"; rc=$?
[ $rc = 2 ] || fail "check of a bad file exited $rc"
grep -qx "$T/bad.yaml:9:17: unknown call 'wirte' (did you mean 'write'?)" "$T/err" || fail "no wirte diagnostic: $(cat "$T/err")"
grep -q "^$T/bad.yaml:12:15: unknown unit 'Mb'" "$T/err" || fail "no unit diagnostic: $(cat "$T/err")"
"$CTL" load "$T/bad.yaml" 2> "$T/err"; rc=$?
[ $rc = 2 ] || fail "load of a bad file exited $rc"
grep -q "nothing was changed" "$T/err" || fail "load does not say nothing changed: $(cat "$T/err")"
after=$("$CTL" ls --json)
[ "$before" = "$after" ] || fail "a bad load changed things: $before -> $after"
[ -e "$(seg_file gamma)" ] && fail "a bad load created gamma"
[ "$(jq_stat beta 'd["scope"]')" = service ] || fail "beta's scope is not service"

# Limits from a file with run -c; -l merges as `set --merge` does: the new rule as
# written, the file's rule keeps the calls it does not name (reads less read).
"$CTL" run -c "$T/good.yaml" -s alpha -l 'read=1MiB/s' -- true || fail "run -c failed"
[ "$(jq_stat alpha 'd["limits"]')" = "['pread+readv+preadv+recv+recvfrom+recvmsg+recvmmsg+fread=10MiB/s', 'read=1MiB/s']" ] ||
  fail "run -c -l limits: $(jq_stat alpha 'd["limits"]')"
"$CTL" run -c "$T/good.yaml" -s nosuch -- true 2> "$T/err"; rc=$?
[ $rc = 2 ] || fail "run with an unknown service exited $rc"

# Programs LD_PRELOAD cannot reach are supervised (issue 9); with --no-supervise they
# are named plainly.
if [ -x /sbin/ldconfig ] && ! file /sbin/ldconfig 2>/dev/null | grep -q dynamically; then
  "$CTL" run -s alpha --no-supervise -- /sbin/ldconfig -p > /dev/null 2> "$T/err" || true
  grep -q "statically linked.*NO LIMITS WILL APPLY" "$T/err" || fail "no warning for a static program: $(cat "$T/err")"
  "$CTL" run -s alpha -- /sbin/ldconfig -p > /dev/null 2> "$T/err" || fail "supervised ldconfig failed: $(cat "$T/err")"
  grep -q "NO LIMITS" "$T/err" && fail "a supervised static program was warned about: $(cat "$T/err")"
fi
# LD_PRELOAD already set is kept, after libbonsai (named for the loaders' choice: docs/reference/libc.md).
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libc.so.6 "$CTL" run -s alpha -- sh -c 'echo "$LD_PRELOAD"') || fail "run sh"
case $out in
  "$BONSAI_BUILD/\$LIB/libbonsai.so:/lib/x86_64-linux-gnu/libc.so.6") ;;
  *) fail "LD_PRELOAD under run: $out" ;;
esac
exit 0
