#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 8, item 5: a segment truncated, overwritten or removed while a process is
# attached must not kill it (SIGBUS): dd goes on, on its last limits (its own
# buckets from then on), and says so once on stderr.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_cmd dd truncate

# run_case NAME ACTION: dd moves 12 MiB at 4 MiB/s (3 s); ACTION hits the segment
# after ~1 s. dd must exit 0 with all its bytes, still at the cap.
run_case() {
  local name=$1 action=$2 seg start rc secs
  seg=$(seg_file "$name")
  start=$(now_ns)
  "$CTL" run -s "$name" -l 'write=4MiB/s' -- \
    dd if=/dev/zero of="$T/$name.out" bs=4k count=3072 status=none 2>"$T/$name.err" &
  local pid=$!
  wait_attached "$name" 1
  sleep 1
  eval "$action"
  wait "$pid"; rc=$?
  secs=$(secs_since "$start")
  [ "$rc" = 0 ] || { cat "$T/$name.err" >&2; fail "$name: dd exited with $rc (SIGBUS is 135)"; }
  [ "$(stat -c %s "$T/$name.out")" = $((12 * MiB)) ] || fail "$name: dd wrote $(stat -c %s "$T/$name.out") bytes"
  check_between "$name: seconds for 12 MiB at 4 MiB/s" "$secs" 2.4 12
  rm -f "$T/$name.out"
}

run_case trunc 'truncate -s 4096 "$seg"'
grep -q 'SIGBUS caught' "$T/trunc.err" || { cat "$T/trunc.err" >&2; fail "trunc: no message on stderr"; }
[ "$(grep -c 'SIGBUS caught' "$T/trunc.err")" = 1 ] || fail "trunc: the message was not said once"

run_case trunc0 'truncate -s 0 "$seg"'
run_case garbage 'head -c 6000 /dev/urandom 1<>"$seg"; truncate -s 6000 "$seg"'
run_case removed 'rm -f "$seg"'
exit 0
