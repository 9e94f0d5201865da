#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fortify symbols (-O2 -D_FORTIFY_SOURCE=2, non-constant sizes): __read_chk,
# __pread_chk, __fread_chk, __fgets_chk, each under a cap, counted, data exact.
# timeout: 30
. "$(dirname "$0")/lib/lib.sh"
. "$(dirname "$0")/lib/xfer_cases.sh"
need_prog file_xfer_fortify
imports "$PRE/file_xfer_fortify" __read_chk __pread_chk __fread_chk __fgets_chk
make_data "$T/bin" 4
make_text "$T/txt" 4
xfer_start file_xfer_fortify rw "$T/bin" 2
xfer_start file_xfer_fortify pread "$T/bin" 2
xfer_start file_xfer_fortify stdio "$T/bin" 2
xfer_start file_xfer_fortify lines "$T/txt" 2
xfer_wait
xfer_check file_xfer_fortify rw "$T/bin" read write
xfer_check file_xfer_fortify pread "$T/bin" pread pwrite
xfer_check file_xfer_fortify stdio "$T/bin" fread fwrite
xfer_check file_xfer_fortify lines "$T/txt" fread fwrite
