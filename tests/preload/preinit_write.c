/* SPDX-License-Identifier: MIT
   preinit_write OUT BYTES: write()s BYTES of 'p' to OUT from a .preinit_array function
   (before any library constructor, libbonsai's included), then BYTES of 'm' from main;
   reports the total and the seconds since the preinit function started. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "preload_util.h"

static double g_t0;
static long long g_written;

static void put(int fd, char c, long long n) {
  static char buf[65536];
  memset(buf, c, sizeof buf);
  while (n > 0) {
    ssize_t w = write(fd, buf, n < (long long)sizeof buf ? (size_t)n : sizeof buf);
    if (w <= 0) die("write");
    n -= w;
    g_written += w;
  }
}

static void early(int argc, char** argv, char** envp) {
  (void)envp;
  g_t0 = now_s();
  if (argc < 3) return;
  int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open");
  put(fd, 'p', size_arg(argv[2]));
  close(fd);
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit)(int, char**, char**) = early;

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OUT BYTES\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_WRONLY | O_APPEND);
  if (fd < 0) die("open");
  put(fd, 'm', size_arg(argv[2]));
  close(fd);
  report(g_written, now_s() - g_t0);
  return 0;
}
