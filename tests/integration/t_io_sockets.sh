#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Socket calls on 127.0.0.1 under one cap restricted to sockets (reads+writes:fd=socket):
# send/recv, sendto/recvfrom, sendmsg/recvmsg, sendmmsg/recvmmsg, and the fortified
# __recv_chk/__recvfrom_chk. Both directions share the bucket; data exact.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/xfer_cases.sh"
need_prog sock_xfer sock_xfer_fortify
imports "$PRE/sock_xfer" send recv sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg
imports "$PRE/sock_xfer_fortify" __recv_chk __recvfrom_chk
make_data "$T/bin" 4
XFER_CHARGED="send recv sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg"
for m in send sendto msg mmsg; do xfer_start sock_xfer $m "$T/bin" 2 :fd=socket; done
xfer_start sock_xfer_fortify send "$T/bin" 2 :fd=socket
xfer_start sock_xfer_fortify sendto "$T/bin" 2 :fd=socket
xfer_wait
xfer_check sock_xfer send "$T/bin" send recv
xfer_check sock_xfer sendto "$T/bin" sendto recvfrom
xfer_check sock_xfer msg "$T/bin" sendmsg recvmsg
xfer_check sock_xfer mmsg "$T/bin" sendmmsg recvmmsg
xfer_check sock_xfer_fortify send "$T/bin" send recv
xfer_check sock_xfer_fortify sendto "$T/bin" sendto recvfrom
# the file side (read of SRC, write of DST) is outside the fd=socket rule: never throttled
[ "$(stats_sum "$T/sock_xfer.send.json" throttled read write)" -eq 0 ] || fail "file calls throttled by an fd=socket rule"
