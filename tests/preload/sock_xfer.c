/* SPDX-License-Identifier: MIT
   sock_xfer, plain build: send/recv, sendto/recvfrom, sendmsg/recvmsg, sendmmsg/recvmmsg. */
// build-flags: -U_FORTIFY_SOURCE
#include "xfer_sock.h"
