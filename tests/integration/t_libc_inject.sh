#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One injection for both libcs (issue #48, docs/reference/libc.md): `bonsaictl run` preloads
# BUILD/$LIB/libbonsai.so with `$LIB` as written, and the loader of every program picks
# its build -- glibc's expands $LIB (lib/x86_64-linux-gnu here) to the glibc build,
# musl's takes the folder literally named `$LIB`, which holds the musl build.
#  (a) a musl program in a musl root, started through the host's chroot (glibc): both
#      load, the program is held to the service's cap, nothing on stderr;
#  (b) a root with both libcs: glibc's env executes a musl program and a musl program
#      executes glibc's dd, each capped (the library hands `$LIB` down as written);
#  (c) a program whose loader takes neither build (here musl's loader under a name no
#      libc of ours has: what a 32-bit program or another libc is to bonsai) runs
#      unlimited with one line on stderr, flagged not_limited in stat, keeping its output
#      and exit status -- started by run itself, and executed by a service process (the
#      trampoline, sv-exec --libc).
# Roots are entered with chroot, the host's /dev/shm (the service segments) and /proc
# bound in, in a mount namespace of their own (in_ns): root only (a user namespace would
# map the segments' owner away).
# timeout: 60
. "$(dirname "$0")/lib/ctl_lib.sh"
. "$TLIB/libc_lib.sh"
[ "$(id -u)" = 0 ] || skip "chroot needs root"
[ -e "$BONSAI_BUILD/\$LIB/libbonsai.so" ] && [ -e "$BONSAI_BUILD/lib/x86_64-linux-gnu/libbonsai.so" ] ||
  fail "no \$LIB layout in $BONSAI_BUILD (make builds it)"
cap=$((4 * MiB))
R=$T/root
musl_root "$R"
layout_in_root "$R"
glibc_into_root "$R" /usr/bin/env /bin/dd
make_data "$R/tmp/src" 8

# in_ns CMD...: CMD in a mount namespace of its own where the root $R has the host's
# /dev/shm (the service segments) and /proc, as a container has them.
mkdir -p "$R/dev/shm" "$R/proc"
in_ns() { unshare -m sh -c 'mount --bind /dev/shm "$0/dev/shm" && mount --bind /proc "$0/proc" && exec "$@"' "$R" "$@"; }

# capped NAME: a capped run's stderr is empty (but for run's note on a private build
# tree) and the service moved 8 MiB of reads.
capped() {
  local name=$1 svc=$2 secs
  shift 2
  local s
  s=$(now_ns)
  in_ns "$CTL" run -s "$svc" -l 'reads=4MiB/s' -- chroot "$R" "$@" > "$T/$name.out" 2> "$T/$name.err" ||
    { cat "$T/$name.err" >&2; fail "$name failed"; }
  secs=$(secs_since "$s")
  [ -z "$(said "$T/$name.err")" ] || fail "$name: stderr: $(said "$T/$name.err" | head -c 300)"
  check_rate "$name" $((8 * MiB)) "$secs" $cap
  [ "$(total_bytes "$svc" read)" -ge $((8 * MiB)) ] || fail "$name: the service counted $(total_bytes "$svc" read) read bytes"
}

# (a)
out=$(in_ns "$CTL" run -s pre -- chroot "$R" /bin/libc_probe getenv LD_PRELOAD) || fail "run getenv"
[ "$out" = "$BONSAI_BUILD/\$LIB/libbonsai.so" ] || fail "run preloads '$out'"
capped "musl program through glibc's chroot" musl /bin/libc_probe copy /tmp/src /tmp/dst
same_data "$R/tmp/src" "$R/tmp/dst"
# (b)
capped "glibc env executes a musl program" mix1 /usr/bin/env /bin/libc_probe copy /tmp/src /tmp/dst
capped "a musl program executes glibc dd" mix2 /bin/libc_probe exec /usr/bin/dd if=/tmp/src of=/tmp/dst2 \
  bs=64k status=none
same_data "$R/tmp/src" "$R/tmp/dst2"

# (c) musl's loader at a path as long as its own, which no libc of bonsai's is named by.
ldso=$(mktemp /tmp/bonsai-ldsoXXXXXX.1)
cleanup_hooks+=("rm -f '$ldso'")
[ ${#ldso} = 24 ] || fail "a loader path of ${#ldso} characters"
cp -L "$MUSL_LDSO" "$ldso" && chmod 755 "$ldso"
perl -pe "s{/lib/ld-musl-x86_64\\.so\\.1}{$ldso}g" "$MUSL_PRE/libc_probe" > "$T/foreign" && chmod 755 "$T/foreign"
[ "$("$T/foreign" say ok 0)" = ok ] || fail "the foreign program does not run"
# not_limited SERVICE: a process of SERVICE is flagged not limited because of its libc.
not_limited() {
  local i
  for i in $(seq 1 60); do
    "$CTL" stat "$1" --json 2> /dev/null | grep -q '"not_limited":\["its libc takes no build of the library"\]' && return 0
    sleep 0.05
  done
  fail "service $1: no process flagged not_limited for its libc: $("$CTL" stat "$1" --json | head -c 400)"
}
one_line() {  # NAME: stderr is one line, saying so
  [ "$(said "$T/$1.err" | wc -l)" = 1 ] || fail "$1: not one line on stderr: $(cat "$T/$1.err")"
  said "$T/$1.err" | grep -q 'takes no build of libbonsai.so.*WITHOUT LIMITS' || fail "$1: $(cat "$T/$1.err")"
  note "$1: $(said "$T/$1.err")"
}
"$CTL" run -s fr -l 'write=1MiB/s' -- "$T/foreign" say ok 3 > "$T/fr.out" 2> "$T/fr.err"
rc=$?
[ $rc = 3 ] && [ "$(cat "$T/fr.out")" = ok ] || fail "run of the foreign program: exit $rc, '$(cat "$T/fr.out")'"
one_line fr
"$CTL" run -s fr -- "$T/foreign" pause 3 2> /dev/null &
not_limited fr
wait
"$CTL" run -s fx -l 'write=1MiB/s' -- sh -c "$T/foreign say ok 3" > "$T/fx.out" 2> "$T/fx.err"
rc=$?
[ $rc = 3 ] && [ "$(cat "$T/fx.out")" = ok ] || fail "a service's exec of the foreign program: exit $rc, '$(cat "$T/fx.out")'"
one_line fx
"$CTL" run -s fx -- sh -c "$T/foreign pause 3; true" 2> /dev/null &
not_limited fx
wait
note "the foreign program: output and exit status kept, one line, not_limited in stat (run and a service's exec)"
