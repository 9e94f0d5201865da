/* SPDX-License-Identifier: MIT
   open_loop PATH N: openat()+close() PATH N times (a call-rate limit target); reports
   the number of opens and the seconds taken. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "preload_util.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATH N\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  double t0 = now_s();
  for (long i = 0; i < n; ++i) {
    int fd = openat(AT_FDCWD, argv[1], O_RDONLY);
    if (fd < 0) die("openat %s", argv[1]);
    if (close(fd)) die("close");
  }
  report(n, now_s() - t0);
  return 0;
}
