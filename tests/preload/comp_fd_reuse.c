/* SPDX-License-Identifier: MIT
   Per-descriptor compression state must not outlive its descriptor (issue 8 item 2).
   Run under libbonsai with BONSAI_COMPRESS_TO=127.0.0.1:* and BONSAI_COMPRESS_ACCEPT=1.
   For each way of closing that the wrappers do not see (close_range, closefrom,
   dup2/dup3 over the number, syscall(SYS_close)), a compressed socket pair (sending
   side framed, receiving side decoding) is closed that way, a regular file is
   opened on the same number, and written and read: the bytes must go to and come
   from the file. Prints "ok CASE" per case; exits 1 at the first failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload_util.h"

static int g_listen;
static struct sockaddr_in g_addr;
static const char* g_dir;

static void pair(int* tx, int* rx) {
  *tx = socket(AF_INET, SOCK_STREAM, 0);
  if (*tx < 0 || connect(*tx, (struct sockaddr*)&g_addr, sizeof g_addr)) die("connect");
  *rx = accept(g_listen, NULL, NULL);
  if (*rx < 0) die("accept");
  /* Both halves in use: the sender frames, the receiver decodes. */
  const char msg[] = "hello through a compressed socket";
  if (write(*tx, msg, sizeof msg) != (ssize_t)sizeof msg) die("write on the socket");
  char buf[64];
  ssize_t r = read(*rx, buf, sizeof buf);
  if (r != (ssize_t)sizeof msg || memcmp(buf, msg, sizeof msg)) die("socket read %zd", r);
}

/* Closes `fd` the way `how` says, leaving the number free (or replaced). */
static void close_by(int fd, const char* how, int spare) {
  if (!strcmp(how, "close_range")) {
    if (syscall(SYS_close_range, (unsigned)fd, (unsigned)fd, 0u)) die("close_range");
  } else if (!strcmp(how, "closefrom")) {
    closefrom(fd);
  } else if (!strcmp(how, "syscall_close")) {
    if (syscall(SYS_close, fd)) die("syscall close");
  } else if (!strcmp(how, "dup2")) {
    if (dup2(spare, fd) != fd) die("dup2");
    close(spare);
  } else if (!strcmp(how, "dup3")) {
    if (dup3(spare, fd, O_CLOEXEC) != fd) die("dup3");
    close(spare);
  }
}

/* The number `fd` now holds a regular file (opened, or dup'ed over it by close_by). */
static void check_file(int fd, const char* path, const char* how, const char* side) {
  const char data[] = "file data, not a socket";
  ssize_t w = write(fd, data, sizeof data);
  if (w != (ssize_t)sizeof data) die("%s (%s side): write on the reused number returned %zd", how, side, w);
  char buf[64] = {0};
  ssize_t r = pread(fd, buf, sizeof buf, 0);
  if (r != (ssize_t)sizeof data || memcmp(buf, data, sizeof data)) die("%s (%s side): file holds %zd bytes", how, side, r);
  if (lseek(fd, 0, SEEK_SET) != 0) die("lseek");
  memset(buf, 0, sizeof buf);
  r = read(fd, buf, sizeof buf);
  if (r != (ssize_t)sizeof data || memcmp(buf, data, sizeof data)) die("%s (%s side): read on the reused number returned %zd", how, side, r);
  close(fd);
  unlink(path);
}

static void one_case(const char* how, int which_side) {
  int tx, rx;
  pair(&tx, &rx);
  int victim = which_side ? rx : tx, other = which_side ? tx : rx;
  const char* side = which_side ? "receiving" : "sending";
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%s", g_dir, how, side);
  int spare = -1;
  int dup_case = !strcmp(how, "dup2") || !strcmp(how, "dup3");
  if (dup_case) {
    spare = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (spare < 0) die("open %s", path);
  }
  close_by(victim, how, spare);
  if (!strcmp(how, "closefrom") && other > victim) other = -1;  /* closefrom took it too */
  int fd = victim;
  if (!dup_case) {
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd != victim) die("%s: file opened on %d, not on the freed %d", how, fd, victim);
  }
  check_file(fd, path, how, side);
  if (other >= 0) close(other);
  printf("ok %s (%s side)\n", how, side);
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: comp_fd_reuse DIR\n");
    return 2;
  }
  g_dir = argv[1];
  g_listen = socket(AF_INET, SOCK_STREAM, 0);
  g_addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof g_addr;
  if (bind(g_listen, (struct sockaddr*)&g_addr, sizeof g_addr) || listen(g_listen, 16) ||
      getsockname(g_listen, (struct sockaddr*)&g_addr, &al))
    die("listen");
  const char* hows[] = {"close_range", "closefrom", "syscall_close", "dup2", "dup3"};
  for (size_t i = 0; i < sizeof hows / sizeof *hows; ++i)
    for (int side = 0; side < 2; ++side) one_case(hows[i], side);
  return 0;
}
