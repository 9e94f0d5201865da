#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Warnings reach the user and say what is true (issue "every word true"): an unwritable
# BONSAI_STATS directory is said at start-up, so `cat` (which closes its stderr before
# the library's exit hook) prints it; the library keeps no copy of the program's stderr
# (`x=$(daemon)` returns while the daemon runs); an unknown BONSAI_LOG is said once;
# root running a setuid-root program is capped and told nothing false; `cdi generate`
# with no services says what it did with the spec it wrote before.
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd cat dd sh

# (1) cat and an unwritable BONSAI_STATS directory: one line, from cat itself.
echo hello > "$T/in"
env LD_PRELOAD="$PRELOAD" BONSAI_STATS="$T/no/such/dir/s.json" cat "$T/in" > "$T/out" 2> "$T/cat.err" || fail "cat failed"
[ "$(cat "$T/out")" = hello ] || fail "cat's output: $(cat "$T/out")"
[ "$(grep -c 'bonsai' "$T/cat.err")" = 1 ] || fail "cat: expected one line: $(cat "$T/cat.err")"
grep -q "BONSAI_STATS: not writing to '$T/no/such/dir/s.json': its directory cannot take a new file (ENOENT)" \
  "$T/cat.err" || fail "cat: $(cat "$T/cat.err")"
note "cat: $(cat "$T/cat.err")"
# dd too (its stderr is open at exit: still one line, not two).
env LD_PRELOAD="$PRELOAD" BONSAI_STATS="$T/no/s.json" dd if=/dev/zero of=/dev/null count=1 status=none 2> "$T/dd.err"
[ "$(grep -c 'bonsai' "$T/dd.err")" = 1 ] || fail "dd: expected one line: $(cat "$T/dd.err")"
# A writable directory: nothing said, the line written.
env LD_PRELOAD="$PRELOAD" BONSAI_STATS="$T/s.json" cat "$T/in" > /dev/null 2> "$T/ok.err"
[ ! -s "$T/ok.err" ] || fail "a writable BONSAI_STATS warned: $(cat "$T/ok.err")"
[ -s "$T/s.json" ] || fail "no stats line in $T/s.json"

# (2) x=$(daemon): the daemon's stderr is /dev/null; the command substitution ends at once.
start=$(now_ns)
x=$(env LD_PRELOAD="$PRELOAD" BONSAI_STATS="$T/no/d.json" sh -c 'sleep 6 < /dev/null > /dev/null 2>&1 & echo started' 2>&1)
secs=$(secs_since "$start")
grep -q started <<<"$x" || fail "the daemon's parent: $x"
check_between "x=\$(daemon) returned (s)" "$secs" 0 3

# (3) BONSAI_LOG misspelt: one line naming it.
env LD_PRELOAD="$PRELOAD" BONSAI_LOG=debgu BONSAI_LIMITS='write=1MiB/s' true 2> "$T/log.err" || fail "true failed"
[ "$(grep -c "BONSAI_LOG='debgu' is not a level" "$T/log.err")" = 1 ] || fail "BONSAI_LOG: $(cat "$T/log.err")"
env LD_PRELOAD="$PRELOAD" BONSAI_LOG=info BONSAI_LIMITS='write=1MiB/s' true 2> "$T/log2.err"
grep -q "is not a level" "$T/log2.err" && fail "a valid BONSAI_LOG warned: $(cat "$T/log2.err")"

# (4) root and a setuid-root program: capped, no "NO LIMITS WILL APPLY".
if [ "$(id -u)" = 0 ]; then
  cp "$(command -v dd)" "$T/dd-suid" && chmod 4755 "$T/dd-suid"
  start=$(now_ns)
  "$CTL" run -s su -l 'write=4MiB/s' -- "$T/dd-suid" if=/dev/zero of=/dev/null bs=64k count=64 status=none \
    2> "$T/su.err" || fail "setuid dd: $(cat "$T/su.err")"
  secs=$(secs_since "$start")
  grep -q "NO LIMITS" "$T/su.err" && fail "false warning: $(cat "$T/su.err")"
  check_between "root's setuid-root dd, 4 MiB at 4 MiB/s (s)" "$secs" 0.7 3
  [ "$(total_bytes su write)" = $((4 * MiB)) ] || fail "the setuid dd was not counted: $(total_bytes su write)"
else
  note "not root: the setuid-root case is skipped"
fi

# (5) cdi generate with no services: says what it did with the spec it wrote before.
"$CTL" run -s c1 -l 'write=1MiB/s' -- true || fail "run c1"
"$CTL" cdi generate --output "$T/spec.yaml" > /dev/null 2> "$T/cdi1.err" || fail "generate: $(cat "$T/cdi1.err")"
[ -s "$T/spec.yaml" ] || fail "no spec written"
"$CTL" rm c1 > /dev/null || fail "rm c1"
"$CTL" rm su > /dev/null 2>&1
rc=0
"$CTL" cdi generate --output "$T/spec.yaml" > /dev/null 2> "$T/cdi2.err" || rc=$?
[ "$rc" = 1 ] || fail "generate with no services: exit $rc"
[ ! -e "$T/spec.yaml" ] || fail "the old spec is still there"
grep -q "removed the spec $T/spec.yaml" "$T/cdi2.err" || fail "generate said: $(cat "$T/cdi2.err")"
grep -q "not written" "$T/cdi2.err" && fail "generate said 'not written' after removing it: $(cat "$T/cdi2.err")"
"$CTL" cdi generate --output "$T/spec.yaml" > /dev/null 2> "$T/cdi3.err"
grep -q "no spec written to $T/spec.yaml" "$T/cdi3.err" || fail "generate (none there) said: $(cat "$T/cdi3.err")"
exit 0
