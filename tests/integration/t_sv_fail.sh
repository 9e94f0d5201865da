#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Supervised mode when things go wrong (issue 9): seccomp refused (a container policy)
# -> run says so in one line, exits 1 and starts nothing, unless --no-supervise (which
# keeps the NO LIMITS warning); a supervisor killed mid-run does not leave the service
# hung; a segment truncated under the supervisor does not harm the service; a
# setuid program is not supervised (and says why); io_uring is denied in a
# supervised tree by default, allowed on request.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static no_seccomp uring_read
P=$PRE/sv_static

# (a) seccomp refused
rc=0
"$PRE/no_seccomp" "$CTL" run -s ns -l 'writes=1MiB/s' -- "$P" write "$T/marker" 1M 2> "$T/err" || rc=$?
[ "$rc" = 1 ] || fail "run without seccomp exited $rc, not 1: $(cat "$T/err")"
[ -e "$T/marker" ] && fail "the command ran although it could not be supervised"
[ "$(wc -l < "$T/err")" = 1 ] || fail "not one line: $(cat "$T/err")"
grep -q 'cannot supervise' "$T/err" || fail "unclear message: $(cat "$T/err")"
"$PRE/no_seccomp" "$CTL" run -s ns --no-supervise -l 'writes=1MiB/s' -- "$P" write "$T/marker" 1M > /dev/null 2> "$T/err" ||
  fail "--no-supervise run failed: $(cat "$T/err")"
grep -q 'NO LIMITS WILL APPLY' "$T/err" || fail "--no-supervise did not warn: $(cat "$T/err")"

# (b) the supervisor killed mid-run: the service ends (its limited calls fail) in bounded time
"$CTL" run -s kill -l 'writes=1MiB/s' -- "$P" write "$T/o" 64M > /dev/null 2>&1 &
pid=$!
wait_attached kill 1
sv=$(pgrep -f "bonsaictl run -s kill" | grep -vx "$pid" | head -n1)
[ -n "$sv" ] || fail "no supervisor process found"
kill -KILL "$sv"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && { kill -KILL "$pid"; fail "the service hung after its supervisor died"; }
rc=0; wait "$pid" || rc=$?
[ "$rc" != 0 ] || fail "the service reported success although its writes could not go on"
note "service ended with status $rc after its supervisor was killed"

# (b2) the segment truncated under the supervisor (SIGBUS territory): it keeps the
# limits with its own buckets, says so, and the service completes at the cap
"$CTL" run -s trunc -l 'writes=4MiB/s' -- "$P" write "$T/o6" 8M > "$T/trunc.out" 2> "$T/trunc.err" &
pid=$!
wait_attached trunc 1
truncate -s 0 "$(seg_file trunc)"
wait "$pid" || fail "the service failed after its segment was truncated: $(cat "$T/trunc.err")"
grep -q 'truncated or damaged' "$T/trunc.err" || fail "the supervisor did not say the segment was lost: $(cat "$T/trunc.err")"
check_rate "supervised write after truncation, cap 4 MiB/s" $((8 * MiB)) "$(field "$(cat "$T/trunc.out")" secs)" \
  $((4 * MiB)) 0.75 1.3
rm -f "$(seg_file trunc)"

# (c) setuid: a program whose exec would change the caller's ids is not supervised, and
# --supervise says why; root's setuid-root program changes no id, so it is supervised
# (and capped) without a word.
cp "$P" "$T/suid" && chmod u+s "$T/suid"
rc=0
"$CTL" run -s su --supervise -l 'writes=1MiB/s' -- "$T/suid" write "$T/o5" 1K 2> "$T/err" > /dev/null || rc=$?
[ "$rc" = 0 ] || fail "root's setuid-root program under --supervise: exit $rc, $(cat "$T/err")"
grep -q 'no_new_privs' "$T/err" && fail "root's setuid-root program: a false no_new_privs warning: $(cat "$T/err")"
if nobody_loads_lib; then
  D=$(mktemp -d /tmp/bonsai-suid.XXXXXX)
  chmod 1777 "$D" && cp "$P" "$D/suid" && chmod 4755 "$D/suid"
  rc=0
  setpriv --reuid=65534 --regid=65534 --clear-groups env BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" \
    "$CTL" run -s su --supervise -l 'writes=1MiB/s' -- "$D/suid" write "$D/o6" 1K 2> "$T/err" > /dev/null || rc=$?
  rm -rf "$D"
  [ "$rc" = 1 ] && grep -q 'no_new_privs' "$T/err" || fail "nobody's --supervise on a setuid-root program: exit $rc, $(cat "$T/err")"
else
  note "nobody cannot load the library here: the setuid refusal for another user is not checked"
fi

# (d) io_uring: denied by default under supervision, allowed on request
head -c $((2 * MiB)) /dev/zero > "$T/f2"
out=$("$CTL" run -s ur --supervise -l 'reads=64MiB/s' -- "$PRE/uring_read" "$T/f2") || fail "uring_read failed"
case $out in *path=read*) ;; *) fail "io_uring was not denied under supervision: $out" ;; esac
out=$("$CTL" run -s ur --supervise --io-uring=allow -l 'reads=64MiB/s' -- "$PRE/uring_read" "$T/f2") || fail "uring_read failed"
case $out in *path=uring*|*init=EPERM*|*init=ENOSYS*) ;; *) fail "--io-uring=allow: $out" ;; esac
exit 0
