#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# io_uring is never silent under a data limit (issue #40): `run` as root denies it by
# default and says so in one line (no no_new_privs needed: fio says why it cannot use it, a liburing program
# falls back to limited reads); a call-rate-only service, --io-uring=allow and an
# exported BONSAI_IO_URING keep it; a user without root is told at launch, and a
# process holding a ring is flagged in `stat` ("io_uring: NOT limited"), and on its own
# stderr once when it set the ring up through glibc's syscall().
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog uring_read uring_syscall
[ "$(id -u)" = 0 ] || skip "needs root (the root default and another user's launch)"
chmod 755 "$T"
head -c $((4 * MiB)) /dev/zero > "$T/f4"
chmod 644 "$T/f4"

# (a) root, a data limit, nothing said: denied, capped, and said
out=$("$CTL" run -s a -l 'reads=4MiB/s' -- "$PRE/uring_read" "$T/f4" 2> "$T/a.err") || fail "uring_read: $(cat "$T/a.err")"
[ "$(field "$out" path)" = read ] || fail "root default: io_uring was not denied: $out"
[ "$(field "$out" nnp)" = 0 ] || fail "root default set no_new_privs: $out"
check_rate "liburing program falling back, reads cap 4 MiB/s" $((4 * MiB)) "$(field "$out" secs)" $((4 * MiB))
# Said in one line (issue "every word true": fio's io_uring engine stops, so run says why)
[ "$(grep -v 'is not searchable' "$T/a.err" | grep -c .)" = 1 ] || fail "root default: expected one line: $(cat "$T/a.err")"
grep -q "note: io_uring denied in service 'a'.*--io-uring=allow" "$T/a.err" || fail "root default: $(cat "$T/a.err")"
if command -v fio > /dev/null; then
  rc=0
  "$CTL" run -s a -l 'reads=20MiB/s' -- fio --name=u --ioengine=io_uring --rw=read --bs=64k --size=4M \
    --filename="$T/f4" > "$T/fio.out" 2>&1 || rc=$?
  [ "$rc" != 0 ] || fail "fio --ioengine=io_uring ran under the root default: $(tail -3 "$T/fio.out")"
  grep -q "doesn't support io_uring" "$T/fio.out" || fail "fio did not say why: $(tail -3 "$T/fio.out")"
  grep -q "io_uring denied in service 'a'" "$T/fio.out" || fail "run did not say it denied io_uring: $(cat "$T/fio.out")"
  note "fio: $(grep "doesn't support io_uring" "$T/fio.out")"
fi

# (b) the last word: --io-uring=allow, an exported allow; a service without data limits
out=$("$CTL" run -s b -l 'reads=4MiB/s' --io-uring=allow -- "$PRE/uring_read" "$T/f4") || fail "--io-uring=allow"
[ "$(field "$out" path)" = uring ] || fail "--io-uring=allow did not keep io_uring: $out"
out=$(BONSAI_IO_URING=allow "$CTL" run -s b -l 'reads=4MiB/s' -- "$PRE/uring_read" "$T/f4") || fail "exported allow"
[ "$(field "$out" path)" = uring ] || fail "BONSAI_IO_URING=allow did not keep io_uring: $out"
out=$("$CTL" run -s b2 -l 'openat=1000/s' -- "$PRE/uring_read" "$T/f4") || fail "call-rate service"
[ "$(field "$out" path)" = uring ] || fail "a service without data limits lost io_uring: $out"

# (c) another user: told at launch; a held ring flagged in stat; a ring set up through
# syscall() said once on the process's stderr
if nobody_loads_lib; then
  as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" "$@"; }
  out=$(as_nobody "$CTL" run -s c -l 'reads=4MiB/s' -- "$PRE/uring_read" "$T/f4" 2> "$T/c.err") || fail "as nobody"
  [ "$(field "$out" path)" = uring ] || fail "as nobody: io_uring denied without being asked: $out"
  grep -q "io_uring stays allowed.*NOT limited.*--io-uring=deny" "$T/c.err" || fail "no launch note: $(cat "$T/c.err")"
  as_nobody "$CTL" run -s c2 -l 'writes=4MiB/s' -- "$PRE/uring_syscall" 2 > "$T/c2.out" 2> "$T/c2.err" &
  pid=$!
  cleanup_hooks+=("kill $pid 2>/dev/null")
  for _ in $(seq 1 40); do [ -s "$T/c2.out" ] && break; sleep 0.05; done
  sleep 0.2
  st=$(as_nobody "$CTL" stat c2 --json)
  python3 - "$st" <<'PY' || fail "stat does not flag the ring: $st"
import json, sys
d = json.loads(sys.argv[1])
assert [p["not_limited"] for p in d["processes"]] == [["io_uring"]], d["processes"]
PY
  as_nobody "$CTL" stat c2 | grep -q 'uring_syscall (io_uring: NOT limited)' || fail "stat table: $(as_nobody "$CTL" stat c2)"
  wait $pid || fail "uring_syscall failed: $(cat "$T/c2.err")"
  [ "$(cat "$T/c2.out")" = ring=ok ] || fail "ring not set up: $(cat "$T/c2.out")"
  [ "$(grep -c 'set up an io_uring.*NOT limited' "$T/c2.err")" = 1 ] || fail "not said once: $(cat "$T/c2.err")"
else
  note "user nobody cannot read $LIB: the other-user cases are not run"
fi
exit 0
