#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# O_DIRECT transfers under a byte rate whose rate/128 is not a whole number of pages
# (20 MB/s: 156,250 B): the library cuts large reads and writes into chunks, and every
# piece of a direct transfer must stay block-aligned (an unaligned one fails EINVAL).
# dd with iflag=direct and oflag=direct, 1 MiB blocks; data exact, rate held.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
make_data "$T/src" 16
dd if="$T/src" of=/dev/null bs=1M iflag=direct status=none 2>/dev/null ||
  skip "this filesystem ($(df -T "$T" | awk 'NR==2 { print $2 }')) refuses O_DIRECT"
cap=20000000
s=$(now_ns)
limited "reads=20MB/s" "$T/r.json" dd if="$T/src" of="$T/copy" bs=1M iflag=direct status=none ||
  fail "dd iflag=direct under reads=20MB/s failed"
check_rate "direct reads" $((16 * MiB)) "$(secs_since "$s")" $cap
same_data "$T/src" "$T/copy"
rm -f "$T/copy"
s=$(now_ns)
limited "writes=20MB/s" "$T/w.json" dd if="$T/src" of="$T/copy" bs=1M oflag=direct status=none ||
  fail "dd oflag=direct under writes=20MB/s failed"
check_rate "direct writes" $((16 * MiB)) "$(secs_since "$s")" $cap
same_data "$T/src" "$T/copy"
