/* SPDX-License-Identifier: MIT
   file_xfer, LFS build: pread64, pwrite64, preadv64, preadv64v2, sendfile64... */
// build-flags: -U_FORTIFY_SOURCE -D_FILE_OFFSET_BITS=64
#include "xfer_file.h"
