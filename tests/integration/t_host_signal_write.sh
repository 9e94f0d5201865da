#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A SIGALRM handler (every 5 ms, no SA_RESTART) write()s while the main thread waits in
# a throttled write(): no deadlock, no EINTR leaks out, all data and records arrive,
# and the signals neither lose nor add time (the rate holds).
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog sig_write
out=$(limited 'write=2MiB/s' "$T/s.json" "$PRE/sig_write" "$T/data" "$T/records" 4M) || fail "sig_write failed"
note "$out"
[ "$(stat -c %s "$T/data")" -eq $((4 * MiB)) ] || fail "data short"
check_rate "write=2MiB/s with a signal every 5 ms" "$(field "$out" bytes)" "$(field "$out" secs)" $((2 * MiB)) 0.75 1.15
