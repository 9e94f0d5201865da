# SPDX-License-Identifier: MIT
# Helpers of the t_libc_* tests (issue #48, docs/reference/libc.md): roots of other
# distributions and of musl, and running a command in one. Sourced, never run.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Roots made with mmdebstrap are kept here, made once per build dir (`make clean` drops
# them): several minutes of downloads saved at every later run.
ROOTS=$BONSAI_BUILD/roots
MUSL_LIB=$BONSAI_BUILD/musl/libbonsai.so
MUSL_PRE=$PRE/musl
# The musl loader, which is musl's libc.so (musl-tools: make deps).
MUSL_LDSO=${MUSL_LDSO:-/lib/ld-musl-x86_64.so.1}

# in_root DIR CMD...: CMD with DIR as its root directory: chroot as root, else in a
# user namespace that maps us to root (unshare -r -R).
in_root() {
  local dir=$1
  shift
  if [ "$(id -u)" = 0 ]; then chroot "$dir" "$@"; else unshare -r -R "$dir" "$@"; fi
}

# need_root_entry DIR CMD...: skips the test if CMD cannot be run in DIR this way (not
# root and no user namespaces).
need_root_entry() {
  in_root "$@" > /dev/null 2>&1 < /dev/null ||
    skip "cannot run a program in a root here (chroot needs root; unshare -r: $(in_root "$@" 2>&1 | head -n1))"
}

# glibc_root SUITE: ROOT := a Debian SUITE root (mmdebstrap --variant=minbase; the
# mirror BONSAI_DEBIAN_MIRROR, else mmdebstrap's default), made once under $ROOTS and
# then reused, one maker at a time. Skips the test when none can be made (no
# mmdebstrap, no mirror reachable).
glibc_root() {
  local suite=$1 rc
  ROOT=$ROOTS/$suite
  mkdir -p "$ROOTS" || fail "mkdir $ROOTS"
  (
    flock 9
    [ -f "$ROOT/.bonsai-root" ] && exit 0
    command -v mmdebstrap > /dev/null || exit 2
    rm -rf "$ROOT.tmp"
    note "making a Debian $suite root in $ROOT (once per build dir)"
    # shellcheck disable=SC2086
    mmdebstrap --variant=minbase "$suite" "$ROOT.tmp" ${BONSAI_DEBIAN_MIRROR:-} > "$ROOTS/$suite.log" 2>&1 || exit 3
    touch "$ROOT.tmp/.bonsai-root" && mv "$ROOT.tmp" "$ROOT"
  ) 9> "$ROOTS/.lock"
  rc=$?
  case $rc in
    0) ;;
    2) skip "no mmdebstrap to make a Debian $suite root (make deps)" ;;
    *) rm -rf "$ROOT.tmp"; skip "cannot make a Debian $suite root: $(grep -m1 -E '^E:' "$ROOTS/$suite.log" || tail -n1 "$ROOTS/$suite.log")" ;;
  esac
}

# musl_root DIR: a root that holds the musl loader and nothing else (/lib/ld-musl-...),
# and /bin/libc_probe (tests/preload/musl/libc_probe.c, built by musl-gcc).
musl_root() {
  local dir=$1
  [ -f "$MUSL_LIB" ] || fail "no $MUSL_LIB (make builds it; musl-tools: make deps)"
  [ -x "$MUSL_PRE/libc_probe" ] || fail "no $MUSL_PRE/libc_probe (make preload)"
  [ -e "$MUSL_LDSO" ] || skip "no musl loader at $MUSL_LDSO (musl-tools: make deps)"
  mkdir -p "$dir/lib" "$dir/bin" "$dir/tmp" || fail "mkdir $dir"
  cp -L "$MUSL_LDSO" "$dir/lib/$(basename "$MUSL_LDSO")" && cp "$MUSL_PRE/libc_probe" "$dir/bin/" || fail "cp"
}

# root_scratch DIR: SCR := a new folder in DIR's /tmp (removed at the end), SCR_IN := its
# path inside the root.
root_scratch() {
  SCR=$(mktemp -d "$1/tmp/bonsai-test.XXXXXX") || fail "mktemp in $1/tmp"
  chmod 755 "$SCR"
  cleanup_hooks+=("rm -rf '$SCR'")
  SCR_IN=${SCR#"$1"}
}

# quiet_ok WHAT OUT ERR RC EXPECT_OUT EXPECT_RC: a program kept its output and exit
# status, and nothing (no loader error) reached stderr.
quiet_ok() {
  local what=$1 out=$2 err=$3 rc=$4
  [ "$rc" = "$6" ] || { cat "$err" >&2; fail "$what: exit status $rc, expected $6"; }
  [ "$(cat "$out")" = "$5" ] || fail "$what: printed '$(head -c 200 "$out")', expected '$5'"
  [ ! -s "$err" ] || fail "$what: stderr: $(head -c 300 "$err")"
  note "$what: '$5', exit $rc, stderr empty"
}

# layout_in_root DIR: the injection folder (the build's $LIB layout, links followed) at
# its own path inside the root DIR, as a container integration mounts it: what
# `bonsaictl run` names (DIR/$LIB/libbonsai.so) is then there for the loaders in DIR.
# Removed at the end.
layout_in_root() {
  local dir=$1 top
  top=${BONSAI_BUILD#/}
  top=/${top%%/*}
  [ -e "$dir$top" ] || cleanup_hooks+=("rm -rf '$dir$top'")
  mkdir -p "$dir$BONSAI_BUILD/\$LIB" "$dir$BONSAI_BUILD/lib/x86_64-linux-gnu" || fail "mkdir in $dir"
  cp -L "$BONSAI_BUILD/\$LIB/libbonsai.so" "$dir$BONSAI_BUILD/\$LIB/" &&
    cp -L "$LIB" "$dir$BONSAI_BUILD/lib/x86_64-linux-gnu/libbonsai.so" || fail "cp the layout into $dir"
}

# glibc_into_root DIR PROG...: glibc's loader and libc, and the programs (which need
# nothing else), copied into DIR: a root with both libcs, as a musl image with glibc
# programs added has.
glibc_into_root() {
  local dir=$1 p
  shift
  mkdir -p "$dir/lib64" "$dir/lib/x86_64-linux-gnu" "$dir/usr/bin" || fail "mkdir in $dir"
  cp -L /lib64/ld-linux-x86-64.so.2 "$dir/lib64/" && cp -L /lib/x86_64-linux-gnu/libc.so.6 "$dir/lib/x86_64-linux-gnu/" ||
    fail "cp glibc into $dir"
  for p in "$@"; do cp -L "$p" "$dir/usr/bin/" || fail "cp $p"; done
}
