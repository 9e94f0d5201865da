#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Threads the supervisor cannot see are charged, never let go (issue 49; docs/reference/supervised.md
# "Threads the supervisor cannot see"): (a) as a user other than root, a static program
# that makes itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as OpenSSH does) hides its
# /proc counters and memory from its supervisor: one 16 MiB write under writes=8MiB/s
# still takes 2 s (0.4 s when the supervisor dropped the thread and its debt), and a
# writev, whose size it cannot read, is held as the most one call moves; (b) Yama
# ptrace_scope >= 1 (simulated: this machine has no Yama) refuses process_vm_readv and
# pidfd_getfd: writev sizes show in the counters afterwards, the cap holds.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
need_cmd setpriv
P=$PRE/sv_static

# (a) non-dumpable, as nobody
[ "$(id -u)" = 0 ] || skip "needs root to run a program as nobody"
setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$CTL" -a -x "$P" ||
  skip "user nobody cannot run $CTL (a build under a private directory)"
D=$T/nobody && mkdir "$D" && chmod 1777 "$T" "$D"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
out=$(as_nobody "$CTL" run -s nd -l 'writes=8MiB/s' -- "$P" nodump rawthreads 1 "$D/nd" 16M 2> "$T/nd.err") ||
  fail "non-dumpable write: $(cat "$T/nd.err")"
check_rate "non-dumpable, one 16 MiB write, cap 8 MiB/s" $((16 * MiB)) "$(field "$out" secs)" $((8 * MiB)) 0.9 1.1
grep -q 'cannot read the I/O counters' "$T/nd.err" || fail "the supervisor did not say what it cannot see: $(cat "$T/nd.err")"
out=$(as_nobody "$CTL" run -s nd2 -l 'writes=8MiB/s' -- "$P" nodump write "$D/nd2" 8M 2> "$T/nd2.err") ||
  fail "non-dumpable writes: $(cat "$T/nd2.err")"
check_rate "non-dumpable, 64 KiB writes, cap 8 MiB/s" $((8 * MiB)) "$(field "$out" secs)" $((8 * MiB)) 0.9 1.1
rc=0
timeout 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" run -s nd3 -l 'writes=64MiB/s' -- "$P" nodump writev \
  "$D/nd3" 1M > /dev/null 2>&1 || rc=$?
[ "$rc" = 124 ] || fail "a non-dumpable writev of unknown size was let go (exit $rc)"
[ "$(stat -c %s "$D/nd3")" -le 65536 ] || fail "non-dumpable writev: $(stat -c %s "$D/nd3") bytes went"

# (b) Yama: memory and descriptors refused, counters readable
out=$(BONSAI_SV_TEST_BLIND=mem,fd "$CTL" run -s ya -l 'writes=8MiB/s' -- "$P" writev "$T/ya" 8M 2> "$T/ya.err") ||
  fail "writev under simulated Yama: $(cat "$T/ya.err")"
check_rate "writev, memory unreadable, cap 8 MiB/s" $((8 * MiB)) "$(field "$out" secs)" $((8 * MiB)) 0.9 1.1
exit 0
