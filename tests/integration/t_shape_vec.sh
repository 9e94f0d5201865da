#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #8 item 6: one huge vectored call (readv, writev, preadv, pwritev, their 64 and
# v2 forms, and the same through syscall()) under a cap on that call takes its time
# (4 MiB at 2 MiB/s: ~2 s; before, 0.05-0.2 s) and moves its data intact. Vectors of
# 300 uneven entries, and of 1000 small ones (pieces run out of entries first).
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/shape_cases.sh"
need_prog shape_calls
imports "$PRE/shape_calls" readv writev preadv pwritev preadv64 pwritev64 preadv2 pwritev2 preadv64v2 pwritev64v2 syscall
# MODE:CALL (the limit name the mode's call is charged to)
CASES="readv:readv preadv:preadv preadv64:preadv preadv2:preadv preadv2_cur:preadv preadv64v2:preadv
sys_preadv2:preadv sys_read:read writev:writev writev_sock:writev sys_writev:writev pwritev:pwritev
pwritev64:pwritev pwritev2_cur:pwritev pwritev64v2:pwritev"
for c in $CASES; do shape_start "${c%%:*}" "${c#*:}=2MiB/s" 4M; done
shape_start readv_tiny "readv=32KiB/s" 64K
shape_start pwritev_tiny "pwritev=32KiB/s" 64K
shape_wait
for c in $CASES; do shape_check "${c%%:*}" "${c#*:}" $((4 * MiB)) 1.5; done
shape_check readv_tiny readv 65536 1.5
shape_check pwritev_tiny pwritev 65536 1.5
