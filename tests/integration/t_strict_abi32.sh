#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Strict mode and the 32-bit ABI (issue 49): the i386 calls with numbers of their own,
# not the 64-bit call's name -- sendfile64 (239) and recvmmsg_time64 (417), made by
# `int $0x80` from a 64-bit program with 32-bit layouts below 4 GiB -- are notified and
# held at the cap (before: sendfile64 moved 8 MiB in 0.001 s under reads=1MiB/s). The
# filter's every number in every ABI is checked in tests/unit/sv_filter_test.cc.
# timeout: 40
. "$(dirname "$0")/lib/ctl_lib.sh"
need_prog strict_probe
P=$PRE/strict_probe
have_ia32 || skip "this kernel runs no 32-bit ABI (int \$0x80 is killed: no IA32 emulation)"
CAP=$((4 * MiB))
N=$((6 * MiB))
head -c $N /dev/zero > "$T/src"

out=$("$CTL" run --strict -s sf64 -l "reads=${CAP}B/s" -- "$P" sendfile64 "$T/src" $N 2> "$T/sf64.err") ||
  fail "sendfile64 under --strict failed: $(cat "$T/sf64.err")"
check_rate "i386 sendfile64 (239) under --strict, reads=4MiB/s" $N "$(field "$out" secs)" $CAP

out=$("$CTL" run --supervise -s sf64s -l "reads=${CAP}B/s" -- "$P" sendfile64 "$T/src" $N 2> "$T/sf64s.err") ||
  fail "sendfile64 under --supervise failed: $(cat "$T/sf64s.err")"
check_rate "i386 sendfile64 (239) under --supervise, reads=4MiB/s" $N "$(field "$out" secs)" $CAP

out=$("$CTL" run --strict -s rm64 -l "reads=${CAP}B/s" -- "$P" recvmmsg64 $N 2> "$T/rm64.err") ||
  fail "recvmmsg_time64 under --strict failed: $(cat "$T/rm64.err")"
# a receive is charged what waits on the socket when the supervisor looks (docs/reference/supervised.md,
# "socket message calls"): bytes arriving just after go uncharged, 3-12% here, hence 1.25
check_rate "i386 recvmmsg_time64 (417) under --strict, reads=4MiB/s" $N "$(field "$out" secs)" $CAP 0.75 1.25
exit 0
