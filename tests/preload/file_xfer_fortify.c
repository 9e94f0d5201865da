/* SPDX-License-Identifier: MIT
   file_xfer, fortified build: __read_chk, __pread_chk, __fread_chk, __fgets_chk
   (non-constant sizes into buffers of known size). */
// build-flags: -O2 -D_FORTIFY_SOURCE=2
#include "xfer_file.h"
