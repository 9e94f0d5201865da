#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vmsplice, named and through syscall(SYS_vmsplice), holds a byte cap (4 MiB at
# 2 MiB/s: about 2 s) and the reader gets every byte.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog vmsplice_loop
for how in named syscall; do
  out=$(limited 'vmsplice=2MiB/s' "$T/$how.json" "$PRE/vmsplice_loop" "$how") || fail "$how: vmsplice_loop failed"
  note "$how: $out"
  [ "$(field "$out" bytes)" = $((4 * MiB)) ] || fail "$how: wrong byte count"
  check_rate "$how: vmsplice=2MiB/s" $((4 * MiB)) "$(field "$out" secs)" $((2 * MiB)) 0.5 1.10
done
exit 0
