/* SPDX-License-Identifier: MIT
   write_bytes PATH BYTES: write()s BYTES to PATH in 64 KiB calls; reports bytes and
   seconds. Built dynamic (write_bytes.c) and static (write_bytes_static.c). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "preload_util.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s PATH BYTES\n", argv[0]);
    return 2;
  }
  long long total = size_arg(argv[2]);
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open %s", argv[1]);
  static char buf[65536];
  memset(buf, 'b', sizeof buf);
  double t0 = now_s();
  for (long long done = 0; done < total;) {
    ssize_t w = write(fd, buf, total - done < (long long)sizeof buf ? (size_t)(total - done) : sizeof buf);
    if (w <= 0) die("write");
    done += w;
  }
  report(total, now_s() - t0);
  return 0;
}
