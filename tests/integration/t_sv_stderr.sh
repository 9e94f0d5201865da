#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A broken stderr never kills the supervisor (issue 49): a supervised static program
# started with stderr full (/dev/full), closed, or a pipe nobody reads; then a `set`
# that adds a call the filter does not notify, so the supervisor has something to say
# (sv_say.h). The program's writes go on and it exits 0 (it failed with exit 1 when
# the supervisor died of ENOSPC and its notified calls answered ENOSYS).
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sv_static
P=$PRE/sv_static

for how in full closed pipe; do
  case $how in
    full) "$CTL" run -s "e$how" -l 'write=16MiB/s' -- "$P" write "$T/o" 32M > "$T/$how.out" 2> /dev/full & ;;
    closed) "$CTL" run -s "e$how" -l 'write=16MiB/s' -- "$P" write "$T/o" 32M > "$T/$how.out" 2>&- & ;;
    pipe) { "$CTL" run -s "e$how" -l 'write=16MiB/s' -- "$P" write "$T/o" 32M 2>&1 > "$T/$how.out" | true; } & ;;
  esac
  pid=$!
  wait_attached "e$how" 1
  "$CTL" set "e$how" 'write=16MiB/s,read=1MiB/s' > /dev/null || fail "$how: set failed"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "stderr $how: the program exited $rc after the supervisor had something to say"
  out=$(cat "$T/$how.out")
  check_rate "stderr $how: 32 MiB under 16 MiB/s" $((32 * MiB)) "$(field "$out" secs)" $((16 * MiB)) 0.5 1.15
done
exit 0
