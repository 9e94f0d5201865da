/* SPDX-License-Identifier: MIT
   sock_xfer, fortified build: recv and recvfrom become __recv_chk and __recvfrom_chk. */
// build-flags: -O2 -D_FORTIFY_SOURCE=2
#include "xfer_sock.h"
