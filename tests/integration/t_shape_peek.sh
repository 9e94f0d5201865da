#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #8 item 11: MSG_PEEK moves nothing, so it is free: neither waited nor charged
# nor counted. A reader that peeks each piece before reading it gets its full cap
# (4 MiB at 2 MiB/s: ~2 s; before, ~4 s: every byte was charged twice) through recv,
# recvfrom and recvmsg, and its counters show the bytes read once.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/shape_cases.sh"
need_prog shape_calls
imports "$PRE/shape_calls" recv recvfrom recvmsg
CASES="peek_recv:recv peek_recvfrom:recvfrom peek_recvmsg:recvmsg"
for c in $CASES; do shape_start "${c%%:*}" "${c#*:}=2MiB/s" 4M; done
shape_wait
# Charged twice it takes 4 s; the bound leaves room for a loaded machine.
for c in $CASES; do shape_check "${c%%:*}" "${c#*:}" $((4 * MiB)) 1.5 3.3; done
