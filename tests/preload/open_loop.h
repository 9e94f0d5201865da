/* SPDX-License-Identifier: MIT
   open_loop PATH N [HOW]: opens and closes PATH N times (a call-rate limit target);
   reports the number of opens and the seconds taken. HOW: openat (openat(AT_FDCWD),
   the default), open (glibc's open(), which makes openat(2)), syscall (syscall(SYS_openat)).
   Built dynamic (open_loop) and static (open_loop_static). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload_util.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATH N [openat|open|syscall]\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  const char* how = argc > 3 ? argv[3] : "openat";
  double t0 = now_s();
  for (long i = 0; i < n; ++i) {
    int fd;
    if (!strcmp(how, "open")) fd = open(argv[1], O_RDONLY);
    else if (!strcmp(how, "syscall")) fd = (int)syscall(SYS_openat, AT_FDCWD, argv[1], O_RDONLY, 0);
    else fd = openat(AT_FDCWD, argv[1], O_RDONLY);
    if (fd < 0) die("%s %s", how, argv[1]);
    if (close(fd)) die("close");
  }
  report(n, now_s() - t0);
  return 0;
}
