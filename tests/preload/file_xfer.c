/* SPDX-License-Identifier: MIT
   file_xfer, plain build: the unsuffixed symbols (read, pread, preadv2, sendfile...). */
// build-flags: -U_FORTIFY_SOURCE
#include "xfer_file.h"
