/* SPDX-License-Identifier: MIT
   ctor_lib: a shared library whose constructor write()s BONSAI_TEST_CTOR_BYTES bytes
   of 'c' to BONSAI_TEST_CTOR_OUT, so wrappers run from another library's constructor,
   before or after libbonsai's own (depending on the LD_PRELOAD order). */
// build-flags: -shared -fPIC
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void ctor_lib_write(void) {
  const char* path = getenv("BONSAI_TEST_CTOR_OUT");
  const char* size = getenv("BONSAI_TEST_CTOR_BYTES");
  if (!path || !size) return;
  long left = atol(size);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) abort();
  static char buf[65536];
  memset(buf, 'c', sizeof buf);
  while (left > 0) {
    ssize_t w = write(fd, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
    if (w <= 0) abort();
    left -= w;
  }
  close(fd);
}
