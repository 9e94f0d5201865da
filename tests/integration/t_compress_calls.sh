#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every data call on a compressed socket goes through the frames (issue 12):
# sendmmsg/recvmmsg, syscall() by number (write, writev, sendto, sendmsg and their
# reads, splice), pwritev2/preadv2 at offset -1, and splice out of the socket into a
# pipe, each after a write() has made the stream framed (tests/preload/comp_calls.c).
# Exact bytes each time; the receiver's totals show frames decoded.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
comp_prog comp_calls 8
