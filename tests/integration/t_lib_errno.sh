#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# errno: calls on a bad fd fail with EBADF (ENOTSOCK for send on a file) under limits,
# and successful throttled calls leave the caller's errno untouched.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog errno_keep
out=$(limited 'reads+writes=2MiB/s' "$T/s.json" "$PRE/errno_keep" "$T/scratch") || fail "errno_keep failed"
note "$out"
[ "$(stats_sum "$T/s.json" throttled write read pread pwrite send recv sendfile fread fwrite)" -gt 10 ] ||
  fail "too few throttled calls: errno was not checked across waits"
