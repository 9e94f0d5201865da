#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a process start touches of libbonsai.so. Each page of the library a
# start faults in costs every exec a few microseconds (sys/startup.h); set-up code sits
# behind the headers, its small globals on .data's one page. tests/preload/startup_pages
# reads its own page tables at main(): with the library and no setting, nothing of the
# code past its first 128 KiB (no far function, no .rodata) and no .bss page; with a
# BONSAI_* variable the library does not know (handed down at exec, so kept), at most
# the one .bss page of the kept settings, and a service member no other. Then the handing down itself: a program that
# changes directory and executes another with an empty environment, under a relative and
# an absolute LD_PRELOAD, still runs it with the library.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog startup_pages
probe=$PRE/startup_pages
case $LIB in /*) ;; *) fail "LIB is not absolute: $LIB" ;; esac
# The harness's own BONSAI_* variables (BONSAI_BUILD, BONSAI_SHM_PREFIX) are settings too.
mapfile -t unset_all < <(env | sed -n 's/^\(BONSAI_[A-Za-z0-9_]*\)=.*/-u\n\1/p')
bare() { env "${unset_all[@]}" "$@"; }

for i in 1 2 3; do
  out=$(bare LD_PRELOAD=$LIB "$probe") || fail "startup_pages under the library: $out"
  note "no setting: $out"
  [ "$(field "$out" far_windows)" = 0 ] || fail "a start touched code or constants far from the headers: $out (nm -n $LIB)"
  [ "$(field "$out" bss_pages)" = 0 ] || fail "a start wrote .bss pages: $out (nm -n $LIB)"
  out=$(bare LD_PRELOAD=$LIB BONSAI_TEST_UNKNOWN=1 "$probe") || fail "startup_pages with BONSAI_TEST_UNKNOWN: $out"
  note "an unknown BONSAI_ variable: $out"
  [ "$(field "$out" far_windows)" = 0 ] || fail "an unknown BONSAI_* variable: touched far code or constants: $out"
  [ "$(field "$out" bss_pages)" -le 1 ] || fail "an unknown BONSAI_* variable: more than the kept settings' .bss page: $out"
done

# A service member: attaching (the segment mapped and checked, a slot claimed) runs code
# kept beside the start-up code (the Makefile's ATTACH_SRC): it touches no window of code
# or constants that a start with BONSAI_LIMITS does not touch too (their .rodata).
"$CTL" run -s pages -- /bin/true || fail "bonsaictl run -s pages"
lim=$(bare LD_PRELOAD=$LIB BONSAI_LIMITS='write=1GiB/s' "$probe") || fail "startup_pages with limits: $lim"
svc=$(bare LD_PRELOAD=$LIB BONSAI_SHM_PREFIX="$BONSAI_SHM_PREFIX" BONSAI_SERVICE=pages BONSAI_SHM_UID=$(id -u) "$probe") ||
  fail "startup_pages as a service member: $svc"
note "limits: $lim; service member: $svc"
# Its small globals (the segment's name and descriptor, the prefix) share the kept
# settings' page (the Makefile's STARTUP_BSS_SRC, linked first): no .bss page of its own.
[ "$(field "$svc" bss_pages)" -le 1 ] || fail "a service member's start wrote more than the kept settings' .bss page: $svc (nm -n $LIB)"
for w in $(field "$svc" far_offsets | tr ',' ' '); do
  case ,$(field "$lim" far_offsets), in *,"$w",*) ;; *) fail "a service member's start touched code at $w that a start with limits does not: $svc (nm -n $LIB)" ;; esac
done

# Handed down at exec: the path as loaded when absolute, resolved at start when relative.
# Python changes directory and executes the probe with an empty environment.
need_cmd python3
# The system's interpreter itself, not a wrapper script (a pyenv shim runs more programs).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
exec_bare='import os, sys; os.chdir("/"); os.execve(sys.argv[1], [sys.argv[1]], {})'
dir=$(dirname "$LIB")
out=$(cd "$dir" && LD_PRELOAD=./$(basename "$LIB") BONSAI_LIMITS='write=1GiB/s' "$py" -c "$exec_bare" "$probe" 2>&1) ||
  fail "relative LD_PRELOAD, exec with an empty environment after chdir(/): $out"
case $out in far_windows=*) ;; *) fail "relative LD_PRELOAD, exec with an empty environment after chdir(/): $out" ;; esac
out=$(LD_PRELOAD=$LIB BONSAI_LIMITS='write=1GiB/s' "$py" -c "$exec_bare" "$probe" 2>&1) ||
  fail "absolute LD_PRELOAD, exec with an empty environment after chdir(/): $out"
case $out in far_windows=*) ;; *) fail "absolute LD_PRELOAD, exec with an empty environment after chdir(/): $out" ;; esac
note "an empty environment after chdir(/) keeps the library (relative and absolute LD_PRELOAD)"
