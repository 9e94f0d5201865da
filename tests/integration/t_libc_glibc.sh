#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The glibc build in other distributions' roots (issue #48, docs/reference/libc.md). It requires
# nothing newer than GLIBC_2.17, so Debian bullseye (glibc 2.31) starts programs with
# it: dd there is held to its cap (8 MiB at 2 MiB/s in 4 s, +-3%), and
# sh -c 'echo ok; exit 3' keeps its output and exit status, with nothing on stderr, in
# bullseye and bookworm (glibc 2.36). The library is named as bonsaictl run names it,
# DIR/$LIB/libbonsai.so with both builds laid out (docs/reference/libc.md): each glibc's loader
# expands $LIB and takes the glibc build. Roots: mmdebstrap minbase, made once per build
# dir (lib/libc_lib.sh); where none can be made the test skips.
# timeout: 360
# parallel: no (a rate held to +-3%; the first run makes two roots)
. "$(dirname "$0")/lib/libc_lib.sh"

for suite in bullseye bookworm; do
  glibc_root $suite
  need_root_entry "$ROOT" /bin/true
  root_scratch "$ROOT"
  mkdir -p "$SCR/\$LIB" "$SCR/lib/x86_64-linux-gnu" "$SCR/lib64" &&
    cp "$MUSL_LIB" "$SCR/\$LIB/libbonsai.so" && cp "$LIB" "$SCR/lib/x86_64-linux-gnu/libbonsai.so" &&
    cp "$LIB" "$SCR/lib64/libbonsai.so" || fail "cp"
  pre="$SCR_IN/\$LIB/libbonsai.so"
  in_root "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin LD_PRELOAD="$pre" BONSAI_LIMITS='write=1MiB/s' \
    /bin/sh -c 'echo ok; exit 3' > "$T/$suite.out" 2> "$T/$suite.err"
  rc=$?
  quiet_ok "$suite: sh -c 'echo ok; exit 3' ($(in_root "$ROOT" /usr/bin/ldd --version | head -n1))" \
    "$T/$suite.out" "$T/$suite.err" $rc ok 3
  [ $suite = bullseye ] || continue
  make_data "$SCR/src" 8
  start=$(now_ns)
  in_root "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin LD_PRELOAD="$pre" BONSAI_LIMITS='reads=2MiB/s' \
    BONSAI_STATS="$SCR_IN/dd.json" dd if="$SCR_IN/src" of="$SCR_IN/dst" bs=64k status=none 2> "$T/dd.err" ||
    { cat "$T/dd.err" >&2; fail "dd in $suite failed"; }
  secs=$(secs_since "$start")
  [ ! -s "$T/dd.err" ] || fail "dd in $suite: stderr: $(head -c 300 "$T/dd.err")"
  check_rate "dd in $suite (reads=2MiB/s)" $((8 * MiB)) "$secs" $((2 * MiB)) 0.97 1.03
  same_data "$SCR/src" "$SCR/dst"
  [ "$(stats_sum "$SCR/dd.json" bytes read)" -eq $((8 * MiB)) ] || fail "dd in $suite: read bytes not counted"
done
