#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue #8 item 6: one huge message call under a cap on it takes its time and moves its
# data intact: blocking sendmsg/recvmsg(MSG_WAITALL) on a stream socket (split into
# pieces), sendmmsg/recvmmsg of 64 datagrams (groups of whole messages), the same
# through syscall(), and one datagram larger than a chunk (paid before, never cut).
# Non-blocking writev calls on TCP hold the cap (were 1.8x it: the kernel took MBs per
# call, charged after).
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/shape_cases.sh"
need_prog shape_calls
imports "$PRE/shape_calls" sendmsg recvmsg sendmmsg recvmmsg writev syscall
CASES="sendmsg:sendmsg sys_sendmsg:sendmsg recvmsg:recvmsg sendmmsg:sendmmsg recvmmsg:recvmmsg
sys_recvmmsg:recvmmsg sendmsg_tiny:sendmsg"
for c in $CASES; do
  case $c in *_tiny:*) shape_start "${c%%:*}" "${c#*:}=32KiB/s" 64K ;; *) shape_start "${c%%:*}" "${c#*:}=2MiB/s" 4M ;; esac
done
shape_start dgram_big "send=64KiB/s" 160K
shape_start writev_nb "writev=4MiB/s" 7M
shape_wait
for c in $CASES; do
  case $c in *_tiny:*) shape_check "${c%%:*}" "${c#*:}" 65536 1.5 ;; *) shape_check "${c%%:*}" "${c#*:}" $((4 * MiB)) 1.5 ;; esac
done
shape_check dgram_big send $((160 * 1024)) 1.8
out=$(cat "$T/writev_nb.out")
[ "$(stats_sum "$T/writev_nb.json" bytes writev)" = $((7 * MiB)) ] || fail "writev_nb: bytes counted"
check_rate "non-blocking writev on TCP" $((7 * MiB)) "$(field "$out" secs)" $((4 * MiB)) 0.5 1.04
