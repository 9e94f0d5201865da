#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A service's static children join its running supervisor (issue 49, item 9;
# abi/sv_join.h): (a) a service shell starting busybox 60 times pays about a bare start
# per child, not a bonsaictl exec and a new supervisor each (11x bare before, here at most
# 6x: a loaded machine slows the supervised loop more than the bare one; bench/scenarios/
# sv_start.sh has the tight number); (b) joined children are held to the service's cap, and their supervisor's messages reach their stderr; (c) with the
# shared supervisor killed, the next child starts its own and is capped; (d) reply-free
# children do not wait; (e) a service without limits runs them as asked, no trampoline.
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
need_cmd busybox file
BB=$(command -v busybox)
file -L "$BB" | grep -q 'statically linked' || skip "$BB is not static"
S=$T/svj_static && cp "$PRE/sv_static" "$S"

# (a) the loop: its shell times the 59 children after the first, against the same bare
LOOP='t1=$(date +%s%N); i=1; while [ $i -lt 60 ]; do '$BB' true; i=$((i + 1)); done; echo $(( ($(date +%s%N) - t1) / 59000 ))'
best_raw= best_sv=
for r in 1 2 3; do
  raw=$(sh -c "$LOOP")
  sv=$("$CTL" run -s "loop$r" -l 'write=1GiB/s' -- sh -c "$BB true; $LOOP") || fail "the service loop failed"
  [ -z "$best_raw" ] || [ "$raw" -lt "$best_raw" ] && best_raw=$raw
  [ -z "$best_sv" ] || [ "$sv" -lt "$best_sv" ] && best_sv=$sv
done
note "busybox true: ${best_raw} us bare, ${best_sv} us as a supervised child of a service shell (best of 3)"
[ "$best_sv" -le $((best_raw * 6 + 300)) ] || fail "a supervised child costs ${best_sv} us against ${best_raw} us bare"

# (b) capped, and told (a `set` naming a call the filter does not notify)
out=$("$CTL" run -s cap --scope service -l 'write=4MiB/s' -- sh -c \
  "$S write $T/c1 2M; $S write $T/c2 2M; $S write $T/c3 2M; $S exec /bin/sh -c 'sleep 0.5; echo x > /dev/null' & sleep 0.2; \
   '$CTL' set cap 'write=4MiB/s,read=1MiB/s' > /dev/null; wait" 2> "$T/cap.err") || fail "capped loop: $(cat "$T/cap.err")"
total=0
for l in $(printf '%s\n' "$out" | sed -n 's/.*secs=//p'); do total=$(awk -v a="$total" -v b="$l" 'BEGIN { print a + b }'); done
check_rate "three joined writers in a row, cap 4 MiB/s" $((6 * MiB)) "$total" $((4 * MiB)) 0.85 1.15
grep -q 'not started with (read' "$T/cap.err" || fail "the shared supervisor's message did not reach the child's stderr: $(cat "$T/cap.err")"

# (c) the shared supervisor killed between two children
out=$("$CTL" run -s kill --scope service -l 'write=4MiB/s' -- sh -c \
  "$S write $T/k1 1M > /dev/null; n=0; for p in \$(pgrep -x bonsai-sv); do grep -qa '$T/k1' /proc/\$p/cmdline &&
   kill -KILL \$p && n=\$((n + 1)); done; echo killed=\$n; sleep 0.2; \
   $S write $T/k2 4M" 2> "$T/kill.err") || fail "after the supervisor was killed: $(cat "$T/kill.err")"
[ "$(field "$out" killed)" = 1 ] || fail "the shared supervisor was not found: $out"
check_rate "a child after its service's supervisor was killed, cap 4 MiB/s" $((4 * MiB)) "$(field "$out" secs)" \
  $((4 * MiB)) 0.85 1.15

# (d) reply-free: no poll and no receive on the join socket in the child; the published
# filter follows `set` (a child started after read= is added has its reads held).
need_cmd strace
head -c $((2 * MiB)) /dev/zero > "$T/in2m"
out=$("$CTL" run -s rf --scope service -l 'write=64MiB/s' -- sh -c \
  "$BB true; ls -lna \"\$(dirname \"\$(ls -d /dev/shm/\${BONSAI_SHM_PREFIX}bonsai-sv.*.d)/x\")\"; \
   strace -f -qq -e trace=connect,poll,ppoll,recvfrom,recvmsg,sendmsg -o '$T/rf.trace' sh -c '$BB true'; \
   '$CTL' set rf 'write=64MiB/s,read=4MiB/s' > /dev/null; $S read $T/in2m" 2> "$T/rf.err") ||
  fail "reply-free children: $(cat "$T/rf.err")"
printf '%s\n' "$out" | grep -q '^-rw------- .* \.bpf\.rf$' || fail "no published filter .bpf.rf (0600) beside the socket: $out"
grep -q 'connect(.*/rf"' "$T/rf.trace" || fail "the traced child did not join: $(cat "$T/rf.trace")"
grep -q 'sendmsg(1017' "$T/rf.trace" || fail "the traced child handed no listener over: $(cat "$T/rf.trace")"
! grep -Eq '(poll|recvfrom|recvmsg)\(' "$T/rf.trace" || fail "the traced child waited for the supervisor: $(cat "$T/rf.trace")"
check_rate "a child after set added read=4MiB/s (the published filter followed)" $((2 * MiB)) \
  "$(printf '%s\n' "$out" | sed -n 's/.*secs=//p' | tail -1)" $((4 * MiB)) 0.8 1.2

# (e) a service without limits: its static children need no supervisor, and they are
# executed as asked, without bonsaictl's trampoline (an exec of it per child, ~8 ms);
# by execve and by posix_spawn (Python's subprocess) alike. With a limit set later, the
# next child is supervised (through the trampoline: the first of its service).
"$CTL" run -s nolim -- sh -c "strace -f -qq -e trace=execve -o '$T/nl.trace' sh -c '$BB true; $BB true'; \
   strace -f -qq -e trace=execve -o '$T/nl_spawn.trace' python3 -c 'import subprocess; subprocess.run([\"$BB\", \"true\"], check=True)'; \
   '$CTL' set nolim 'write=1GiB/s' > /dev/null; strace -f -qq -e trace=execve -o '$T/nl_set.trace' sh -c '$BB true'" \
  2> "$T/nl.err" || fail "an unlimited service's static children: $(cat "$T/nl.err")"
[ "$(grep -c "execve(\"$BB\"" "$T/nl.trace")" = 2 ] || fail "the unlimited service's busybox was not executed twice as asked: $(cat "$T/nl.trace")"
! grep -q 'sv-exec' "$T/nl.trace" "$T/nl_spawn.trace" || fail "an unlimited service's static child went through the trampoline: $(cat "$T/nl.trace" "$T/nl_spawn.trace")"
grep -q "execve(\"$BB\"" "$T/nl_spawn.trace" || fail "posix_spawn did not run busybox: $(cat "$T/nl_spawn.trace")"
grep -q 'sv-exec' "$T/nl_set.trace" || fail "after set added a limit, the static child was not supervised: $(cat "$T/nl_set.trace")"
note "an unlimited service's static children run as asked (execve and posix_spawn); after set, supervised"
exit 0
