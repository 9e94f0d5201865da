#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pthread_cancel of threads waiting in throttled write()s (one 8 MiB call at 1 MiB/s,
# one loop of small writes): both end promptly with PTHREAD_CANCELED and join.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog cancel_wait
out=$(limited 'write=1MiB/s' "$T/s.json" "$PRE/cancel_wait") || fail "cancel_wait failed"
note "$out"
check_between "join after cancel (s)" "$(echo "$out" | sed -n 's/^join_secs=//p')" 0 1.0
