/* SPDX-License-Identifier: MIT
   errno_keep: under a small cap, (1) calls on a bad fd fail with the kernel's EBADF;
   (2) successful, throttled calls leave errno exactly as the caller set it. Covers
   read/write/pread/pwrite/readv/writev/send/recv/sendfile/fread/fwrite. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload_util.h"

static char g_buf[65536];
static int g_checks;

#define EXPECT_FAIL(expr, want)                                                      \
  do {                                                                               \
    errno = 0;                                                                       \
    long r_ = (long)(expr);                                                          \
    if (r_ != -1 || errno != (want)) die("%s: returned %ld, errno %d, want %d", #expr, r_, errno, want); \
    g_checks++;                                                                      \
  } while (0)

#define EXPECT_KEEP(expr)                                                            \
  do {                                                                               \
    errno = EDOM;                                                                    \
    long r_ = (long)(expr);                                                          \
    if (r_ <= 0) die("%s failed", #expr);                                            \
    if (errno != EDOM) die("%s: errno changed to %d", #expr, errno);                 \
    g_checks++;                                                                      \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SCRATCH_FILE\n", argv[0]);
    return 2;
  }
  const int bad = 1000;  /* never open here */
  struct iovec v = {g_buf, sizeof g_buf};
  EXPECT_FAIL(write(bad, g_buf, 100), EBADF);
  EXPECT_FAIL(write(bad, g_buf, sizeof g_buf), EBADF); /* above one chunk: the split path */
  EXPECT_FAIL(read(bad, g_buf, 100), EBADF);
  EXPECT_FAIL(pread(bad, g_buf, 100, 0), EBADF);
  EXPECT_FAIL(pwrite(bad, g_buf, 100, 0), EBADF);
  EXPECT_FAIL(readv(bad, &v, 1), EBADF);
  EXPECT_FAIL(writev(bad, &v, 1), EBADF);
  EXPECT_FAIL(send(bad, g_buf, 100, 0), EBADF);
  EXPECT_FAIL(recv(bad, g_buf, 100, 0), EBADF);
  EXPECT_FAIL(sendfile(bad, 0, NULL, 100), EBADF);

  int file = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  int zero = open("/dev/zero", O_RDONLY);
  int null = open("/dev/null", O_WRONLY);
  int sp[2];
  if (file < 0 || zero < 0 || null < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sp)) die("setup");
  FILE* f = fopen("/dev/null", "w");
  FILE* z = fopen("/dev/zero", "r");
  if (!f || !z) die("fopen");
  EXPECT_FAIL(send(file, g_buf, 100, 0), ENOTSOCK);
  for (int i = 0; i < 4; ++i) { /* 4 rounds x ~300 KiB at the test's cap: many waits */
    EXPECT_KEEP(write(null, g_buf, 16384));
    EXPECT_KEEP(write(null, g_buf, sizeof g_buf));
    EXPECT_KEEP(read(zero, g_buf, sizeof g_buf));
    EXPECT_KEEP(pwrite(file, g_buf, 16384, 0));
    EXPECT_KEEP(pread(file, g_buf, 16384, 0));
    EXPECT_KEEP(writev(null, &v, 1));
    EXPECT_KEEP(send(sp[0], g_buf, 16384, 0));
    EXPECT_KEEP(recv(sp[1], g_buf, 16384, 0));
    EXPECT_KEEP(sendfile(null, file, &(off_t){0}, 16384));
    EXPECT_KEEP(fwrite(g_buf, 1, 16384, f));
    EXPECT_KEEP(fread(g_buf, 1, 16384, z));
  }
  printf("checks=%d\n", g_checks);
  return 0;
}
