#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The supervisors' join rendezvous is the service owner's alone (libbonsai/abi/sv_join.h,
# docs/reference/limits.md "Process trees"). Someone else takes it first and hands out a filter
# that lets every call go (tests/preload/sv_squat.c, which also takes the listener a
# joiner hands back, and probes a socket as a joiner would); in every case the service's
# static children still run capped under the service (a sh of the service runs sv_static
# twice: 4 MiB at 4 MiB/s) and the squatter gets no connection. Before the fix: (a) 115-769x
# the cap, the squatter got both children's listeners and stderrs; (b) 625-667x, the same;
# (e) 31-106x; (g) 16x; (c), (d), (f): nothing said, nothing replaced, nothing served.
#   (a) root on the host binds 0.2.0's abstract name; (b) so does a rootful container on
#   the host's network (Podman, an empty root holding sv_squat); (c) user nobody makes the
#   owner's rendezvous directory first and listens in it: the supervisor says so, once
#   for the service (4 static programs of 2 sh: 4 lines before, 1 after);
#   (d) a stale socket in the owner's directory is replaced (later children join), and a
#   regular file at the socket's name makes the supervisor say so; (e) a supervisor of the
#   same user in another pid namespace holds the rendezvous: host children do not join it
#   (before: they did, and its notifications, pid 0, went uncharged), and it refuses a
#   host joiner, whose pid it cannot see (0); (f) a joiner in another pid namespace is
#   refused by the host's supervisor, one in its own is served, and the service's static
#   programs in another pid namespace start supervisors of their own and stay capped;
#   (g) root's supervisor for nobody's segment does not serve root's same-named service.
# timeout: 120
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static sv_squat
need_cmd setpriv unshare
[ "$(id -u)" = 0 ] || skip "needs root (a root squatter, user nobody's, a pid namespace)"
chmod 755 "$T"
S=$T/sv_static && cp "$PRE/sv_static" "$S"
Q=$T/sv_squat && cp "$PRE/sv_squat" "$Q"
OLD_MAGIC=314a5642  # what 0.2.0's joiners take
NEW_MAGIC=$(sed -n 's/.*kSvJoinMagic = 0x\([0-9a-f]*\);.*/\1/p' "$TLIB/../../../libbonsai/abi/sv_join.h" 2>/dev/null)
NEW_MAGIC=${NEW_MAGIC:-324a5642}
rdir() { echo "/dev/shm/${BONSAI_SHM_PREFIX}bonsai-sv.0.d"; }

# wait_line FILE LINE: waits up to 5 s for LINE in FILE.
wait_line() {
  for _ in $(seq 1 100); do grep -qx "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
  fail "no '$2' in $1: $(cat "$1" 2> /dev/null)"
}

# capped SERVICE WHAT [BEFORE [AFTER]]: the service's sh runs two static writers (2 MiB
# each) at 4 MiB/s (scope service), BEFORE and AFTER (shell text) around them: held to
# the cap together; stderr in $T/SERVICE.err. What is asserted is the ceiling (a child
# given away runs hundreds of times over it); the floor is low: a supervisor starting
# each child on a machine busier than its cores is slower, never faster.
capped() {
  local out total=0 l
  out=$(${RUNPFX:-} "$CTL" run -s "$1" --scope service -l 'write=4MiB/s' -- sh -c \
    "${3:-}$S write $T/$1.1 2M; $S write $T/$1.2 2M${4:-}" 2> "$T/$1.err") || fail "$2: $(cat "$T/$1.err")"
  for l in $(printf '%s\n' "$out" | sed -n 's/.*secs=//p'); do total=$(awk -v a="$total" -v b="$l" 'BEGIN { print a + b }'); done
  check_rate "$2" $((4 * MiB)) "$total" $((4 * MiB)) 0.4 1.15
}

# hold NAME: shell text of a static child of the service that stays until the test
# touches $T/NAME.stop (at most 30 s): its supervisor serves meanwhile; $T/NAME.up once
# it runs (its supervisor has started).
hold() { echo "$S exec /bin/sh -c ': > $T/$1.up; i=0; while [ ! -e $T/$1.stop ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done'"; }

# no_conn FILE WHAT: the squatter's output shows no connection.
no_conn() {
  local c k
  c=$(grep -c '^conn' "$1")
  k=$(grep -c '^listener' "$1")
  note "$2: the squatter got $c connections, $k descriptors"
  [ "$c" = 0 ] && [ "$k" = 0 ] || fail "$2: the squatter got $c connections and $k descriptors"
}

# (a) root binds 0.2.0's abstract name first.
"$Q" abstract "bonsai-sv.${BONSAI_SHM_PREFIX}0.sqa" "$OLD_MAGIC" 20 > "$T/qa.out" 2>&1 &
qa=$!
cleanup_hooks+=("kill $qa 2> /dev/null")
wait_line "$T/qa.out" ready
capped sqa "(a) root squatting the old abstract name"
kill $qa
no_conn "$T/qa.out" "(a) root squatting the old abstract name"

# (b) a rootful container on the host's network binds it (no bonsai device at all).
if command -v podman > /dev/null && command -v runc > /dev/null; then
  export CONTAINERS_CONF=$T/containers.conf
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
    > "$CONTAINERS_CONF"
  mkdir -p "$T/croot" && cp "$Q" "$T/croot/sv_squat"
  C=${BONSAI_SHM_PREFIX}sq
  cleanup_hooks+=("podman rm -f -t 0 '$C' > /dev/null 2>&1")
  if podman run -d --name "$C" --network host --rootfs "$T/croot" /sv_squat abstract \
    "bonsai-sv.${BONSAI_SHM_PREFIX}0.sqb" "$OLD_MAGIC" 30 > "$T/qb.id" 2> "$T/qb.err"; then
    for _ in $(seq 1 100); do podman logs "$C" 2> /dev/null | grep -qx ready && break; sleep 0.1; done
    podman logs "$C" 2> /dev/null | grep -qx ready || fail "the container's squatter did not start: $(podman logs "$C" 2>&1)"
    capped sqb "(b) a host-network container squatting the old abstract name"
    podman logs "$C" > "$T/qb.out" 2>&1
    podman rm -f -t 0 "$C" > /dev/null 2>&1
    no_conn "$T/qb.out" "(b) a host-network container squatting the old abstract name"
  else
    note "(b) not run: podman run failed: $(tail -n1 "$T/qb.err")"
  fi
else
  note "(b) not run: no podman and runc (a host-side squatter, (a), is the same name)"
fi

# (c) user nobody makes the owner's rendezvous directory first and listens in it.
export BONSAI_SHM_PREFIX=${SHM_PREFIX_AT_START}n.
setpriv --reuid=65534 --regid=65534 --clear-groups "$Q" path "$(rdir)" sqc "$NEW_MAGIC" 20 > "$T/qc.out" 2>&1 &
qc=$!
cleanup_hooks+=("kill $qc 2> /dev/null")
wait_line "$T/qc.out" ready
[ "$(stat -c %u "$(rdir)")" = 65534 ] || fail "(c) nobody could not make $(rdir) (test setup)"
capped sqc "(c) nobody's rendezvous directory"
mv "$T/sqc.err" "$T/sqc.err1"
capped sqc "(c) nobody's rendezvous directory, the service's second sh"
kill $qc
no_conn "$T/qc.out" "(c) nobody's rendezvous directory"
cat "$T/sqc.err1" >> "$T/sqc.err"
grep -q "$(rdir) belongs to uid 65534" "$T/sqc.err" || fail "(c) the supervisor did not say why: $(cat "$T/sqc.err")"
said=$(grep -c 'belongs to uid 65534' "$T/sqc.err")
note "(c) 4 static programs (2 sh) met nobody's directory: said $said times"
[ "$said" = 1 ] || fail "(c) said $said times, not once for the service: $(cat "$T/sqc.err")"

# (d) a stale socket in the owner's directory is replaced by the first child's supervisor
# (a probe is served by it, the writers join it); a regular file is in the way.
export BONSAI_SHM_PREFIX=${SHM_PREFIX_AT_START}d.
mkdir -m 700 "$(rdir)"
"$Q" stale "$(rdir)" sqd > /dev/null || fail "(d) cannot plant a stale socket"
stale_ino=$(stat -c %i "$(rdir)/sqd")
capped sqd "(d) a stale socket at the rendezvous" "$(hold d) & $Q probe $(rdir)/sqd > $T/qd.probe; " \
  "; touch $T/d.stop; wait"
grep -qx "magic=$NEW_MAGIC" "$T/qd.probe" || fail "(d) the stale socket was not replaced by a live one: $(cat "$T/qd.probe")"
[ "$(stat -c %i "$(rdir)/sqd" 2> /dev/null)" != "$stale_ino" ] || fail "(d) the stale socket is still there"
: > "$(rdir)/sqx"
capped sqx "(d) a regular file at the rendezvous"
grep -q "$(rdir)/sqx is not a socket" "$T/sqx.err" || fail "(d) the supervisor did not say why: $(cat "$T/sqx.err")"

# (e) the same user's supervisor in another pid namespace serves the rendezvous first.
export BONSAI_SHM_PREFIX=${SHM_PREFIX_AT_START}e.
unshare --pid --fork --mount-proc "$CTL" run -s sqe --scope service -l 'write=4MiB/s' -- \
  sh -c "$(hold e)" > /dev/null 2> "$T/inner.err" &
inner=$!
cleanup_hooks+=("kill $inner 2> /dev/null")
for _ in $(seq 1 200); do
  [ -S "$(rdir)/sqe" ] || grep -q "@bonsai-sv.${BONSAI_SHM_PREFIX}0.sqe" /proc/net/unix && break
  sleep 0.05
done
[ -S "$(rdir)/sqe" ] || grep -q "@bonsai-sv.${BONSAI_SHM_PREFIX}0.sqe" /proc/net/unix ||
  fail "(e) the inner supervisor serves nothing: $(cat "$T/inner.err")"
capped sqe "(e) host children while another pid namespace's supervisor serves"
# The inner supervisor cannot see a host joiner (its pid there is 0): refused.
hostp=$("$Q" probe "$(rdir)/sqe")
note "(e) a host joiner at the inner supervisor (pid 0 to it): $hostp"
[ "$hostp" = refused ] || fail "(e) the inner supervisor served a joiner whose pid it cannot see: $hostp"
touch "$T/e.stop"

# (f) the host's supervisor refuses a joiner of another pid namespace.
export BONSAI_SHM_PREFIX=${SHM_PREFIX_AT_START}f.
"$CTL" run -s sqf --scope service -l 'write=4MiB/s' -- sh -c "$(hold f)" > /dev/null 2> "$T/f.err" &
host=$!
cleanup_hooks+=("kill $host 2> /dev/null")
for _ in $(seq 1 200); do [ -S "$(rdir)/sqf" ] && break; sleep 0.05; done
[ -S "$(rdir)/sqf" ] || fail "(f) the host's supervisor serves nothing: $(cat "$T/f.err")"
[ "$(stat -c '%u %a' "$(rdir)")" = "0 700" ] || fail "(f) the rendezvous directory: $(stat -c '%u %a' "$(rdir)")"
other=$(unshare --pid --fork "$Q" probe "$(rdir)/sqf")
same=$("$Q" probe "$(rdir)/sqf")
note "(f) a joiner in another pid namespace: $other; in the supervisor's: $same"
[ "$other" = refused ] || fail "(f) a joiner of another pid namespace was served: $other"
[ "$same" = "magic=$NEW_MAGIC" ] || fail "(f) a joiner of the supervisor's pid namespace was not served: $same"
# The service's static programs in another pid namespace, the host's supervisor serving:
# they do not join it (to them its pid is 0; to it theirs is another namespace's), each
# starts a supervisor of its own, and they stay capped.
RUNPFX="unshare --pid --fork --mount-proc" capped sqf "(f) static programs in another pid namespace"
touch "$T/f.stop"

# (g) root's process for nobody's segment (BONSAI_SHM_UID=65534: root may use it)
# starts a supervisor for nobody's service; root's own service of the same name does not
# join it (before: it served under root's uid, and root's children were charged to
# nobody's 64 MiB/s).
export BONSAI_SHM_PREFIX=${SHM_PREFIX_AT_START}g.
"$CTL" run --user nobody -s sqg --scope service -l 'write=64MiB/s' -- true 2> "$T/g.run.err" ||
  fail "(g) nobody's segment: $(cat "$T/g.run.err")"
env LD_PRELOAD="$LIB" BONSAI_SERVICE=sqg BONSAI_SHM_UID=65534 BONSAI_CTL="$CTL" sh -c "$(hold g)" 2> "$T/g.err" &
nob=$!
cleanup_hooks+=("kill $nob 2> /dev/null")
for _ in $(seq 1 200); do [ -e "$T/g.up" ] && break; sleep 0.05; done
[ -e "$T/g.up" ] || fail "(g) root's static child of nobody's service did not start: $(cat "$T/g.err")"
capped sqg "(g) root's service beside root's supervisor of nobody's same-named service"
touch "$T/g.stop"
wait $inner $host $nob
exit 0
