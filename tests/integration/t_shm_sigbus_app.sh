#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 8, item 5, for programs with a SIGBUS handler of their own: a handler installed
# after start-up (sigaction or signal) must not replace the segment guard. The program's
# own faults still reach its handler; a truncated segment does not kill it.
# timeout: 30
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog sigbus_app
for how in sigaction signal; do
  name=bus$how
  seg=$(seg_file "$name")
  out=$("$CTL" run -s "$name" -l 'write=2MiB/s' -- "$PRE/sigbus_app" "$seg" "$how" 2>"$T/$name.err") \
    || { cat "$T/$name.err" >&2; fail "$how: sigbus_app failed ($?): $out"; }
  note "$how: $out"
  [ "$out" = "app_faults=1 bytes=4194304" ] || fail "$how: unexpected result '$out'"
  grep -q 'SIGBUS caught' "$T/$name.err" || { cat "$T/$name.err" >&2; fail "$how: the guard did not say so"; }
done
exit 0
