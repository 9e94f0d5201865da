#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Static and Go children of a service (issue #40): a static program (busybox from
# busybox-static, the suite's static C program) and a Go program started by sh, by
# Python's subprocess, by posix_spawn, vfork+exec and execvp after a failed PATH walk
# hold the service's caps (supervised through bonsaictl's trampoline); the child's
# exit status and a signal that ends it reach its parent unchanged; a static child
# that forks and execs again stays capped; `stat` lists the child as supervised; a
# supervisor killed mid-run ends the child cleanly and its parent goes on; a child
# whose supervisor cannot start runs unlimited, said on stderr and in `stat`.
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static spawn_child no_seccomp
need_cmd python3 sh
P=$PRE/sv_static S=$PRE/spawn_child
BB=$(command -v busybox || true)
if [ -n "$BB" ] && ! file -L "$BB" 2>/dev/null | grep -q 'statically linked'; then BB=; fi
[ -n "$BB" ] || note "no static busybox (Debian busybox-static): its cases are skipped"
CAP=$((2 * MiB))
head -c $((3 * MiB)) /dev/zero > "$T/in"

# timed_run WHAT CMD...: CMD's wall time into $secs (the child's own I/O dominates it).
timed_run() {
  local what=$1 t0
  shift
  t0=$(now_ns)
  "$@" > "$T/out" 2> "$T/err" || fail "$what failed: $(cat "$T/err")"
  secs=$(secs_since "$t0")
  said "$T/err" | grep -q 'WITHOUT LIMITS\|NOT limited' && fail "$what: said it runs unlimited: $(cat "$T/err")"
  return 0
}

# (a) busybox cat started by sh (a read cap), and by busybox's own sh (a static child
# that forks and execs again)
if [ -n "$BB" ]; then
  timed_run "sh -> busybox cat" "$CTL" run -s a -l "reads=${CAP}B/s" -- sh -c "$BB cat $T/in > /dev/null"
  check_rate "busybox cat started by sh, reads cap 2 MiB/s" $((3 * MiB)) "$secs" $CAP
  timed_run "sh -> busybox sh -> busybox cat" "$CTL" run -s a2 -l "reads=${CAP}B/s" -- \
    sh -c "$BB sh -c '$BB cat $T/in > /dev/null; $BB true'"
  check_rate "busybox cat started by busybox sh, reads cap 2 MiB/s" $((3 * MiB)) "$secs" $CAP
  # an environment saying BONSAI_LEAVE=0 (not leaving) must not keep the library awake in
  # the trampoline (it would redirect the exec to itself again)
  timed_run "env BONSAI_LEAVE=0 busybox cat" timeout 20 "$CTL" run -s a3 -l "reads=${CAP}B/s" -- \
    env BONSAI_LEAVE=0 "$BB" cat "$T/in"
  [ "$(stat -c %s "$T/out")" = $((3 * MiB)) ] || fail "env BONSAI_LEAVE=0 busybox cat: $(stat -c %s "$T/out") bytes"
  check_rate "busybox cat after env BONSAI_LEAVE=0, reads cap 2 MiB/s" $((3 * MiB)) "$secs" $CAP
fi

# (b) the static C program started by Python's subprocess (a write cap)
timed_run "python3 subprocess" "$CTL" run -s b -l "writes=${CAP}B/s" -- python3 -c \
  "import subprocess, sys; sys.exit(subprocess.run(['$P', 'write', '$T/o', '3M']).returncode)"
check_rate "static child of python3, writes cap 2 MiB/s" $((3 * MiB)) "$(field "$(cat "$T/out")" secs)" $CAP

# (c) posix_spawn, vfork + execv, and execvp after an execvp of a missing name
for how in spawn vfork; do
  timed_run "$how" "$CTL" run -s "c$how" -l "reads=${CAP}B/s" -- "$S" "$how" "$P" read "$T/in"
  check_rate "static child by $how, reads cap 2 MiB/s" $((3 * MiB)) "$(field "$(head -1 "$T/out")" secs)" $CAP
  grep -qx 'status=0' "$T/out" && grep -qx alive "$T/out" || fail "$how: the parent saw: $(cat "$T/out")"
done
timed_run "execvp" env PATH="$PRE:$PATH" "$CTL" run -s cexecvp -l "reads=${CAP}B/s" -- "$S" execvp sv_static read "$T/in"
[ "$(head -1 "$T/out")" = alive ] || fail "a failed execvp broke the caller: $(cat "$T/out")"
check_rate "static program by execvp after a failed one, reads cap 2 MiB/s" $((3 * MiB)) \
  "$(field "$(sed -n 2p "$T/out")" secs)" $CAP

# (d) a Go program (io.Copy, its own system calls) started by sh
if build_gocat; then
  timed_run "sh -> Go io.Copy" "$CTL" run -s d -l "writes=${CAP}B/s" -- sh -c "$GOCAT $T/in $T/go.out"
  check_rate "Go child (io.Copy file to file), writes cap 2 MiB/s" $((3 * MiB)) "$(field "$(cat "$T/out")" secs)" $CAP
  cmp -s "$T/in" "$T/go.out" || fail "the Go copy differs"
else
  note "go cannot build gocat: its case is skipped ($(tail -1 "$T/gobuild.log" 2>/dev/null))"
fi
# A dynamic Go child without Go's build-id note (cgo, -buildid=): the library judges
# it by its sections, as bonsaictl run does; preloaded, Go's own calls went unlimited.
if build_gocat_dyn; then
  rm -f "$T/go.out"
  timed_run "sh -> dynamic Go io.Copy" "$CTL" run -s d -l "writes=${CAP}B/s" -- sh -c "$GOCAT_DYN $T/in $T/go.out"
  check_rate "dynamic Go child without a build-id note, writes cap 2 MiB/s" $((3 * MiB)) "$(field "$(cat "$T/out")" secs)" $CAP
  cmp -s "$T/in" "$T/go.out" || fail "the dynamic Go copy differs"
else
  note "go cannot build a dynamic gocat: its case is skipped ($(tail -1 "$T/gobuild.log" 2>/dev/null))"
fi

# (e) exit status and a signal reach the parent unchanged (posix_spawnp walks PATH)
if [ -n "$BB" ]; then
  out=$("$CTL" run -s e -l 'reads=100MiB/s' -- "$S" spawnp busybox sh -c 'exit 7' 2> "$T/e.err") ||
    fail "spawnp: $out $(cat "$T/e.err")"
  [ "$(head -1 <<<"$out")" = status=7 ] || fail "exit status 7 seen as: $out $(cat "$T/e.err")"
  out=$("$CTL" run -s e -l 'reads=100MiB/s' -- "$S" vfork "$BB" sh -c 'kill -TERM $$' 2> "$T/e.err") ||
    fail "vfork: $out $(cat "$T/e.err")"
  [ "$(head -1 <<<"$out")" = signal=15 ] || fail "SIGTERM seen as: $out $(cat "$T/e.err")"
  rc=0; "$CTL" run -s e -l 'reads=100MiB/s' -- sh -c "$BB sh -c 'exit 3'" || rc=$?
  [ "$rc" = 3 ] || fail "sh saw exit status $rc, not 3"
fi

# (f) stat lists the child as supervised while it runs
"$CTL" run -s f -l "writes=${CAP}B/s" -- sh -c "$P write $T/of 8M > /dev/null" 2> "$T/f.err" &
pid=$!
cleanup_hooks+=("kill $pid 2>/dev/null")
wait_attached f 2
sleep 0.3
[ "$(jq_stat f '[p["comm"] for p in d["processes"] if p["supervised"]] == ["sv_static"]')" = True ] ||
  fail "stat does not list the static child as supervised: $("$CTL" stat f --json)"
wait $pid || fail "supervised child failed: $(cat "$T/f.err")"

# (g) the supervisor killed mid-run: the child ends in bounded time, its parent goes on
"$CTL" run -s g -l 'writes=1MiB/s' -- sh -c "$P write $T/og 64M > /dev/null 2>&1; echo child=\$?" \
  > "$T/g.out" 2> "$T/g.err" &
pid=$!
cleanup_hooks+=("kill $pid 2>/dev/null")
wait_attached g 2
# (its own: the supervisors of the cases above linger a moment for children that may join them)
sv=$(pgrep -f "bonsaictl sv-exec -- $P $P write $T/og" | head -n1)
[ -n "$sv" ] || fail "no supervisor process found"
kill -KILL "$sv"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
kill -0 "$pid" 2>/dev/null && fail "the tree hung after its supervisor died"
wait $pid || true
grep -q '^child=[1-9]' "$T/g.out" || fail "the parent did not go on after the child ended: $(cat "$T/g.out")"
note "child ended with $(cat "$T/g.out") after its supervisor was killed"

# (h) seccomp refused: the child runs unlimited, said on stderr and in stat
if [ -n "$BB" ]; then
  "$PRE/no_seccomp" "$CTL" run -s h -l 'writes=1MiB/s' -- sh -c "$BB sleep 4" 2> "$T/h.err" &
  pid=$!
  cleanup_hooks+=("kill $pid 2>/dev/null")
  sleep 0.7
  [ "$(jq_stat h '[p["not_limited"] for p in d["processes"] if p["not_limited"]]')" = \
    "[['static or Go program, no supervisor']]" ] || fail "stat does not flag the unsupervised child: $("$CTL" stat h --json)"
  "$CTL" stat h | grep -q 'NOT limited' || fail "the stat table does not say NOT limited: $("$CTL" stat h)"
  wait $pid || fail "the unsupervised child failed: $(cat "$T/h.err")"
  [ "$(grep -c 'cannot be supervised.*WITHOUT LIMITS' "$T/h.err")" = 1 ] || fail "not said once: $(cat "$T/h.err")"
fi
exit 0
