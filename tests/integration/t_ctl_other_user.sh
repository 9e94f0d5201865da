#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Services of other users (issue 11, item 6): root runs and manages a service as
# another user with --user: the segment is that user's (owner, mode 0600), the command
# runs as that user and is capped; stat, ls, set and rm address it; the user sees it as
# their own; a non-root user cannot address anyone else's services.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
[ "$(id -u)" = 0 ] || skip "needs root (useradd, --user)"
need_cmd useradd userdel setpriv
U=bonsai-it-$$
U=${U:0:31}
useradd --system --no-create-home --shell /usr/sbin/nologin "$U" 2>/dev/null || skip "cannot add a user"
cleanup_hooks+=("userdel $U 2>/dev/null")
uid=$(id -u "$U")
# Programs the user can reach (the build tree may sit under a private directory).
pub=$(mktemp -d /tmp/bonsai-pub.XXXXXX) && chmod 755 "$pub"
cleanup_hooks+=("rm -rf $pub")
cp "$PRE/sv_static" "$CTL" "$pub/" && chmod 755 "$pub"/*

# root runs a (supervised: static) writer as the user, capped
"$CTL" run --user "$U" -s web -l 'writes=4MiB/s' -- "$pub/sv_static" write /dev/null 8M > "$T/out" 2> "$T/err" ||
  fail "run --user failed: $(cat "$T/err")"
check_rate "a writer run as $U, cap 4 MiB/s" $((8 * MiB)) "$(field "$(cat "$T/out")" secs)" $((4 * MiB))
f="/dev/shm/${BONSAI_SHM_PREFIX}bonsai.$uid.web"
[ -f "$f" ] || fail "no segment $f for $U"
[ "$(stat -c '%u %a' "$f")" = "$uid 600" ] || fail "segment is $(stat -c '%u %a' "$f"), not $uid 600"
[ ! -e "$(seg_file web)" ] || fail "root got a segment of its own"

# The command ran as the user: its process was counted in the user's service
"$CTL" run --user "$U" -s who --supervise -l 'writes=100MiB/s' -- "$pub/sv_static" exec /usr/bin/id -u > "$T/id" ||
  fail "run --user id failed"
[ "$(cat "$T/id")" = "$uid" ] || fail "the command ran as uid $(cat "$T/id"), not $uid"

# A dynamic program (LD_PRELOAD) as the user, when the user can read the library
if setpriv --reuid="$uid" --regid="$(id -g "$U")" --clear-groups test -r "$LIB"; then
  s=$(now_ns)
  "$CTL" run --user "$U" -s dyn -l 'write=4MiB/s' -- dd if=/dev/zero of=/dev/null bs=64k count=128 status=none ||
    fail "run --user dd failed"
  check_rate "dd (preloaded) as $U, cap 4 MiB/s" $((8 * MiB)) "$(secs_since "$s")" $((4 * MiB)) 0.7
  "$CTL" rm --user "$U" dyn > /dev/null
else
  note "the user cannot read $LIB (a private checkout): the preloaded case is left out"
fi

# stat, ls, set, rm --user
"$CTL" stat --user "$U" web --json | grep -q '"service":"web"' || fail "stat --user"
"$CTL" ls --user "$U" | grep -q web || fail "ls --user does not list web"
"$CTL" set --user "$U" web 'writes=8MiB/s' > /dev/null || fail "set --user"
"$CTL" stat --user "$U" web --json | grep -q 'writes=8MiB/s' || fail "set --user did not change the limits"

# The user sees the service as their own
setpriv --reuid="$uid" --regid="$(id -g "$U")" --clear-groups env BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" \
  "$pub/bonsaictl" ls > "$T/ls" 2>&1 || fail "the user's own ls failed: $(cat "$T/ls")"
grep -q web "$T/ls" || fail "the user does not see their service: $(cat "$T/ls")"
# ... and cannot address root's services
rc=0
setpriv --reuid="$uid" --regid="$(id -g "$U")" --clear-groups env BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" \
  "$pub/bonsaictl" ls --user root > "$T/err" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q 'only root' "$T/err" || fail "a user addressed root's services: exit $rc, $(cat "$T/err")"

# YAML `user:`: root's load makes the segment the user's; run -c runs the command as them
cat > "$T/svc.yaml" <<YML
version: 1
services:
  filed:
    user: $U
    limits:
      - calls: writes
        rate: 4MiB/s
YML
"$CTL" load "$T/svc.yaml" > "$T/load.out" || fail "load with user: failed"
grep -q "for user $U" "$T/load.out" || fail "load did not say whose: $(cat "$T/load.out")"
[ "$(stat -c '%u %a' "/dev/shm/${BONSAI_SHM_PREFIX}bonsai.$uid.filed")" = "$uid 600" ] || fail "load user: segment owner"
"$CTL" run -c "$T/svc.yaml" -s filed -- "$pub/sv_static" exec /usr/bin/id -u > "$T/id2" || fail "run -c with user: failed"
[ "$(cat "$T/id2")" = "$uid" ] || fail "run -c ran as $(cat "$T/id2"), not $uid"
"$CTL" rm --user "$U" filed > /dev/null || fail "rm --user filed"
# Root's exporter serves every user's services, each with a user label
if command -v curl > /dev/null; then
  port=$(free_port)
  "$CTL" serve --listen "127.0.0.1:$port" 2> /dev/null &
  serve_pid=$!
  cleanup_hooks+=("kill $serve_pid 2>/dev/null")
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/metrics" > "$T/m" && break; sleep 0.1; done
  kill "$serve_pid"
  grep -q "^bonsai_processes{service=\"web\",user=\"$U\"}" "$T/m" ||
    fail "root's serve has no user-labeled sample for $U's service: $(grep bonsai_processes "$T/m")"
fi

"$CTL" rm --user "$U" web || fail "rm --user"
"$CTL" rm --user "$U" who || fail "rm --user who"
[ ! -e "$f" ] || fail "rm --user left $f"
exit 0
