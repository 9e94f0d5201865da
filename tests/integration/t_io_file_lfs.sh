#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The LFS symbols (-D_FILE_OFFSET_BITS=64): pread64/pwrite64, preadv64/pwritev64,
# preadv64v2/pwritev64v2, sendfile64, each under a cap, counted, data exact.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/xfer_cases.sh"
need_prog file_xfer_lfs
imports "$PRE/file_xfer_lfs" pread64 pwrite64 preadv64 pwritev64 preadv64v2 pwritev64v2 sendfile64
make_data "$T/bin" 4
xfer_start file_xfer_lfs pread "$T/bin" 2
xfer_start file_xfer_lfs preadv "$T/bin" 2
xfer_start file_xfer_lfs preadv2 "$T/bin" 2
xfer_start file_xfer_lfs sendfile "$T/bin" 1
xfer_wait
xfer_check file_xfer_lfs pread "$T/bin" pread pwrite
xfer_check file_xfer_lfs preadv "$T/bin" preadv pwritev
xfer_check file_xfer_lfs preadv2 "$T/bin" preadv pwritev
xfer_check file_xfer_lfs sendfile "$T/bin" sendfile
