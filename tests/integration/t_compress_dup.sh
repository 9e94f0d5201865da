#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A compressed connection reached through duplicated descriptors (issue 12): written
# through the socket and a dup/dup2/dup3/F_DUPFD_CLOEXEC copy in turn (the original
# closed first, the rest through the copy), and read through a copy that epoll
# watches while the library holds decoded bytes (tests/preload/comp_dup.c). Exact
# bytes each time; the receiver's totals show frames decoded.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
comp_prog comp_dup 6
