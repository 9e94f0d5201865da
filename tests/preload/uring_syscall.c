/* SPDX-License-Identifier: MIT
   uring_syscall [SECS]: sets up an io_uring through glibc's syscall() (as liburing built
   on libc, QEMU or older fio do), keeps it SECS seconds (default 0), and prints
   "ring=ok" or "ring=ERRNO-NAME" (issue #40: a ring set up under a data limit is never
   silent). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char** argv) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  long fd = syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) printf("ring=%s\n", errno == ENOSYS ? "ENOSYS" : strerror(errno));
  else printf("ring=ok\n");
  fflush(stdout);
  if (argc > 1) {
    struct timespec ts = {0, (long)(atof(argv[1]) * 1e9)};
    while (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    nanosleep(&ts, NULL);
  }
  return 0;
}
