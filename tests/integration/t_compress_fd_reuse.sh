#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 8 item 2: compression state attached to a descriptor never applies to another
# object that later holds the same number, however the socket was closed (close_range,
# closefrom, syscall(SYS_close), dup2/dup3 over it): a file opened on the number is
# written and read normally, on the sending and on the receiving side.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog comp_fd_reuse
out=$(env LD_PRELOAD="$PRELOAD" BONSAI_COMPRESS_TO='127.0.0.1:*' BONSAI_COMPRESS_ACCEPT=1 \
  "$PRE/comp_fd_reuse" "$T" 2> "$T/err") || { cat "$T/err" >&2; printf '%s\n' "$out" >&2; fail "comp_fd_reuse failed"; }
printf '%s\n' "$out" | sed 's/^/  /' >&2
[ "$(printf '%s\n' "$out" | grep -c '^ok ')" = 10 ] || fail "not every case ran"
