/* SPDX-License-Identifier: MIT
   aio_rw, LFS build: aio_read64, aio_write64, lio_listio64, aio_error64, aio_return64. */
// build-flags: -D_FILE_OFFSET_BITS=64
#include "aio_rw.h"
