#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stdio on compressed sockets (issue 12): a FILE from fdopen() on a socket writes frames
# (also after a write() started the stream) and reads decoded bytes, with fwrite,
# fprintf, putc, fputs / read, fread, fgets, getc, getline (tests/preload/comp_stdio.c,
# one process forking a sender per case). The receiver's totals show frames decoded.
# sanitized: yes
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
comp_prog comp_stdio 6
