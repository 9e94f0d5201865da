#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A segment planted by another user (issue 8, item 4): user nobody copies a segment
# to root's name (bonsai.0.<service>, owned by nobody, mode 0600). Root's bonsaictl
# used to accept it (root was exempt from the owner check) while the library refused
# it, so `run -l write=1MiB/s` ran dd unlimited. Now every command refuses it,
# naming the owner and how to clear it; dd never runs; rm --force (root) clears it.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (plants a segment as user nobody with setpriv)"
need_cmd setpriv dd

"$CTL" run -s src -l 'write=100MiB/s' -- true || fail "run src"
plant=/dev/shm/${BONSAI_SHM_PREFIX}plant.$$
cleanup_hooks+=("rm -f $plant")
cp "$(seg_file src)" "$plant" && chmod 644 "$plant"
victim=$(seg_file victim)
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "umask 077; cp '$plant' '$victim'" ||
  skip "user nobody cannot write to /dev/shm"
[ "$(stat -c %u "$victim")" = 65534 ] || fail "the planted file is not owned by nobody"

"$CTL" run -s victim -l 'write=1MiB/s' -- dd if=/dev/zero of="$T/out" bs=1M count=4 status=none 2> "$T/err"; rc=$?
[ $rc = 1 ] || fail "run on a planted segment exited $rc: $(cat "$T/err")"
[ -e "$T/out" ] && fail "dd ran (unlimited) on a planted segment"
note "$(cat "$T/err")"
grep -q "belongs to user nobody (uid 65534)" "$T/err" || fail "the refusal does not name the owner: $(cat "$T/err")"
grep -q "rm $victim" "$T/err" || fail "the refusal does not say how to clear it: $(cat "$T/err")"
for cmd in "stat victim" "set victim write=1MiB/s" "rm victim"; do
  # shellcheck disable=SC2086
  "$CTL" $cmd > /dev/null 2> "$T/err"; rc=$?
  [ $rc = 1 ] || fail "$cmd on a planted segment exited $rc"
  grep -q "uid 65534" "$T/err" || fail "$cmd: refusal does not name the owner: $(cat "$T/err")"
done
"$CTL" ls > "$T/out" 2>/dev/null && fail "ls exited 0 with a planted segment"
grep -q "uid 65534" "$T/out" || fail "ls does not show the planted segment's owner: $(cat "$T/out")"
[ -e "$victim" ] || fail "a refusing command removed the file"

# A symbolic link under the name is refused too (O_NOFOLLOW), not followed.
ln -s "$(seg_file src)" "$(seg_file link)"
"$CTL" stat link > /dev/null 2> "$T/err" && fail "stat followed a symbolic link"
grep -q "symbolic link" "$T/err" || fail "symlink refusal unclear: $(cat "$T/err")"
rm -f "$(seg_file link)"

# Root clears the name, then the service works as it should.
"$CTL" rm --force victim || fail "root's rm --force of a planted segment"
[ -e "$victim" ] && fail "rm --force left the planted file"
start=$(now_ns)
"$CTL" run -s victim -l 'write=1MiB/s' -- dd if=/dev/zero of="$T/out" bs=64k count=32 status=none || fail "run after clearing"
check_rate "victim after clearing" $((2 * MiB)) "$(secs_since "$start")" $MiB
exit 0
