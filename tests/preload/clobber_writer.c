/* SPDX-License-Identifier: MIT
   clobber_writer SECONDS: overwrites the strings of its environment with zero bytes, as
   nginx does when it writes its process title over argv and environ (setproctitle),
   then writes 64 KiB blocks to /dev/null for SECONDS seconds (at most 60). What the
   library reads from the environment after that must come from copies it made at
   set-up (issue 34: option values point into the environment as it was). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

int main(int argc, char** argv) {
  double secs = argc > 1 ? atof(argv[1]) : 10;
  if (secs > 60) secs = 60;
  for (char** e = environ; e && *e; ++e) memset(*e, 0, strlen(*e));
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0) return 1;
  static char buf[65536];
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    if (write(fd, buf, sizeof buf) < 0) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
  return 0;
}
