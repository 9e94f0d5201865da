#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Wrappers called before any constructor: a .preinit_array function write()s 2 MiB
# (libc's environment is not set up yet), then main write()s 2 MiB. All data arrives,
# every write is counted and the cap holds overall.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
need_prog preinit_write
out=$(limited 'write=2MiB/s' "$T/preinit.json" "$PRE/preinit_write" "$T/preinit.out" 2M) || fail "preinit_write failed"
note "$out"
[ "$(stat -c %s "$T/preinit.out")" -eq $((4 * MiB)) ] || fail "data short"
[ "$(head -c $((2 * MiB)) "$T/preinit.out" | tr -d p | wc -c)" -eq 0 ] || fail "preinit data corrupt"
[ -s "$T/preinit.json" ] ||
  fail "no BONSAI_STATS line: the first wrapper call (from .preinit_array) set the library up without its environment"
[ "$(stats_sum "$T/preinit.json" bytes write)" -eq $((4 * MiB)) ] ||
  fail "counted $(stats_sum "$T/preinit.json" bytes write) write bytes, want $((4 * MiB))"
check_rate "preinit + main: 4 MiB at write=2MiB/s" "$(field "$out" bytes)" "$(field "$out" secs)" $((2 * MiB)) 0.75 1.10
