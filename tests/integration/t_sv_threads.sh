#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Supervised programs with many threads, and a supervisor short of descriptors (issue 49):
# (a) 200 threads each making one raw 256 KiB write at once under write=4MiB/s: the
# bucket's queue (12.5 s of rate) is longer than the clock holds (max_ahead_ns, 10 s);
# each thread's debt is taken only when its bucket is due, so after 3 s the file holds
# what 3 s of rate allow (it held 22 MiB, 1.8x, when every thread took at once).
# (b) the supervisor with room for few descriptors (a test hook lowers its limit): its
# threads' counters unreadable, they are charged by their sizes, never let go; forked
# processes too. (c) `prlimit --nofile=64` (hard 64): run says what is missing and starts
# nothing; a hard limit above 1017 works, the program keeps its own soft limit and the
# supervisor raises its own to the hard one.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
need_cmd prlimit
P=$PRE/sv_static

# (a) 200 threads, one write each
t0=$(now_ns)
timeout 3.5 "$CTL" run -s many -l 'write=4MiB/s' -- "$P" rawthreads 200 "$T/many" 256K > /dev/null 2> "$T/many.err" &
pid=$!
sleep 3
got=$(stat -c %s "$T/many")
secs=$(secs_since "$t0")
wait "$pid"
check_rate "200 threads, one 256 KiB write each, first ${secs} s" "$got" "$secs" $((4 * MiB)) 0.5 1.15

# (b) out of descriptors: 40 threads and 40 processes, each charged
out=$(BONSAI_SV_TEST_NOFILE=20 "$CTL" run -s few -l 'write=1MiB/s' -- "$P" rawthreads 40 "$T/few" 64K 2> "$T/few.err") ||
  fail "threads with few descriptors: $(cat "$T/few.err")"
check_rate "40 threads, supervisor with 20 descriptors" $((40 * 64 * 1024)) "$(field "$out" secs)" $((1 * MiB)) 0.9 1.1
grep -q 'out of descriptors' "$T/few.err" || fail "the supervisor did not say it ran out: $(cat "$T/few.err")"
out=$(BONSAI_SV_TEST_NOFILE=20 "$CTL" run -s fewp --scope service -l 'write=2MiB/s' -- "$P" fork 40 "$T/fewp" 4M \
  2> "$T/fewp.err") || fail "processes with few descriptors: $(cat "$T/fewp.err")"
check_rate "40 processes, supervisor with 20 descriptors" $((4 * MiB)) "$(field "$out" secs)" $((2 * MiB)) 0.9 1.1

# (c) the program's own open-file limit
rc=0
prlimit --nofile=64 "$CTL" run -s lo --supervise -l 'write=1MiB/s' -- "$P" write "$T/lo" 1K > /dev/null 2> "$T/lo.err" || rc=$?
[ "$rc" = 1 ] || fail "run under a hard limit of 64 exited $rc: $(cat "$T/lo.err")"
grep -q 'open-file limit is 64 (hard 64).*at least 1018' "$T/lo.err" || fail "unclear message: $(cat "$T/lo.err")"
[ -e "$T/lo" ] && fail "the program ran although it could not be supervised"
svc=lo2_$$  # its supervisor told from other tests' by its command line
out=$(prlimit --nofile=64:4096 "$CTL" run -s "$svc" --supervise -l 'write=1MiB/s' -- "$P" exec /bin/sh -c \
  'ulimit -Sn; for p in $(pgrep -x bonsai-sv); do tr "\0" " " < /proc/$p/cmdline | grep -q -- "-s '"$svc"' " &&
   grep "open files" /proc/$p/limits; done; true' 2> "$T/lo2.err") || fail "run under a soft limit of 64: $(cat "$T/lo2.err")"
[ "$(printf '%s\n' "$out" | head -n1)" = 64 ] || fail "the program's soft limit changed: $out"
printf '%s\n' "$out" | grep -q 'open files *4096 *4096' || fail "the supervisor kept a low limit: $out"
exit 0
