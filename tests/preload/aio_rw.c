/* SPDX-License-Identifier: MIT
   POSIX AIO under libbonsai: aio_read, aio_write, lio_listio, aio_error, aio_return,
   aio_cancel (issue 18 item 2). The program is aio_rw.h (modes and usage there). */
#include "aio_rw.h"
