#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The musl build (issue #48, docs/reference/libc.md) with a program built by musl-gcc, in a root
# that holds the musl loader and nothing else, named as bonsaictl run names it
# (/opt/bonsai/$LIB/libbonsai.so: musl's loader takes `$LIB` literally, docs/reference/libc.md):
# the program keeps its output and exit
# status with nothing on stderr (what sh -c 'echo ok; exit 3' shows of a glibc root),
# read() is held to its cap (8 MiB at 2 MiB/s in 4 s, +-3%) and so is fread (musl's
# stdio makes its own system calls: the library limits the stdio call), with the
# bytes counted and the data intact.
# timeout: 60
# parallel: no (a rate held to +-3%)
. "$(dirname "$0")/lib/libc_lib.sh"

R=$T/root
musl_root "$R"
need_root_entry "$R" /bin/libc_probe say ok 0
mkdir -p "$R/opt/bonsai/\$LIB" && cp "$MUSL_LIB" "$R/opt/bonsai/\$LIB/libbonsai.so" || fail "cp"
# probe ENV... PROG ARGS: the program started in the root with the library preloaded
# (the probe's env mode is the root's env(1)).
probe() { in_root "$R" /bin/libc_probe env 'LD_PRELOAD=/opt/bonsai/$LIB/libbonsai.so' "$@"; }

probe BONSAI_LIMITS='write=1MiB/s' /bin/libc_probe say ok 3 > "$T/say.out" 2> "$T/say.err"
quiet_ok "musl: libc_probe say ok 3" "$T/say.out" "$T/say.err" $? ok 3

make_data "$R/tmp/src" 8
probe BONSAI_LIMITS='reads=2MiB/s' BONSAI_STATS=/tmp/copy.json /bin/libc_probe copy /tmp/src /tmp/dst > "$T/copy.out" 2> "$T/copy.err" ||
  { cat "$T/copy.err" >&2; fail "libc_probe copy failed"; }
[ ! -s "$T/copy.err" ] || fail "copy: stderr: $(head -c 300 "$T/copy.err")"
check_rate "musl read (reads=2MiB/s)" "$(field "$(cat "$T/copy.out")" bytes)" "$(field "$(cat "$T/copy.out")" secs)" \
  $((2 * MiB)) 0.97 1.03
same_data "$R/tmp/src" "$R/tmp/dst"
[ "$(stats_sum "$R/tmp/copy.json" bytes read)" -eq $((8 * MiB)) ] || fail "musl: read bytes not counted"
[ "$(stats_sum "$R/tmp/copy.json" bytes write)" -eq $((8 * MiB)) ] || fail "musl: write bytes not counted"

probe BONSAI_LIMITS='fread=4MiB/s' BONSAI_STATS=/tmp/stdio.json /bin/libc_probe stdio /tmp/src /tmp/dst2 > "$T/stdio.out" ||
  fail "libc_probe stdio failed"
check_rate "musl fread (fread=4MiB/s)" "$(field "$(cat "$T/stdio.out")" bytes)" "$(field "$(cat "$T/stdio.out")" secs)" \
  $((4 * MiB))
same_data "$R/tmp/src" "$R/tmp/dst2"
[ "$(stats_sum "$R/tmp/stdio.json" bytes fread)" -eq $((8 * MiB)) ] || fail "musl: fread bytes not counted"
