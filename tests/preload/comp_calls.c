/* SPDX-License-Identifier: MIT
   Every way a program writes to or reads from a compressed socket goes through the
   frames (issue 12). Run under libbonsai with BONSAI_COMPRESS_TO=127.0.0.1:* and
   BONSAI_COMPRESS_ACCEPT=1. Raw, these put bytes into a framed stream (the peer
   resets it) or hand the program a compressing peer's frames: sendmmsg/recvmmsg,
   syscall() by number (write, writev, sendto, sendmsg, read, readv, recvfrom, recvmsg,
   splice), pwritev2/preadv2 at offset -1, and splice out of the socket into a pipe.
   For each case a child sends ~1 MiB of text over a fresh connection (after a write()
   greeting, so the stream is framed before the call under test) and the parent reads
   it another way and compares. Prints "ok CASE" per case; exits 1 at the first failure. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_util.h"

static int g_listen;
static struct sockaddr_in g_addr;
static char* g_text;
static size_t g_len;

static void make_text(void) {
  size_t cap = 1 << 20;
  g_text = malloc(cap + 256);
  if (!g_text) die("malloc");
  g_len = 0;
  for (int i = 0; g_len < cap; ++i)
    g_len += (size_t)sprintf(g_text + g_len, "record %d: status=ok region=eu-west latency_ms=%d\n", i, i * 13 % 997);
}

/* One call of up to n bytes at p by `how`; returns the bytes it took. */
static ssize_t send_some(int fd, const char* how, const char* p, size_t n) {
  struct iovec v[2] = {{(void*)p, n / 2}, {(void*)(p + n / 2), n - n / 2}};
  struct msghdr h = {.msg_iov = v, .msg_iovlen = 2};
  if (!strcmp(how, "sendmmsg")) {
    struct mmsghdr mm[2] = {{.msg_hdr = {.msg_iov = &v[0], .msg_iovlen = 1}},
                            {.msg_hdr = {.msg_iov = &v[1], .msg_iovlen = 1}}};
    int r = sendmmsg(fd, mm, 2, 0);
    if (r < 0) return -1;
    return (ssize_t)mm[0].msg_len + (r == 2 ? (ssize_t)mm[1].msg_len : 0);
  }
  if (!strcmp(how, "sys_write")) return syscall(SYS_write, fd, p, n);
  if (!strcmp(how, "sys_writev")) return syscall(SYS_writev, fd, v, 2);
  if (!strcmp(how, "sys_sendto")) return syscall(SYS_sendto, fd, p, n, 0, NULL, 0);
  if (!strcmp(how, "sys_sendmsg")) return syscall(SYS_sendmsg, fd, &h, 0);
  if (!strcmp(how, "pwritev2")) return pwritev2(fd, v, 2, -1, 0);
  die("unknown send mode %s", how);
  return -1;
}

static void send_text(int fd, const char* how) {
  if (write(fd, "HELLO\n", 6) != 6) die("write greeting");
  for (size_t off = 0; off < g_len;) {
    size_t n = g_len - off < 6000 ? g_len - off : 6000;
    ssize_t r = send_some(fd, how, g_text + off, n);
    if (r <= 0) die("%s", how);
    off += (size_t)r;
  }
  close(fd);
}

/* One call reading into out (room for cap bytes) by `how`; returns bytes, 0 at the end. */
static ssize_t recv_some(int fd, const char* how, char* out, size_t cap, int pipe_fd[2]) {
  if (cap > 5000) cap = 5000;
  struct iovec v[2] = {{out, cap / 2}, {out + cap / 2, cap - cap / 2}};
  struct msghdr h = {.msg_iov = v, .msg_iovlen = 2};
  if (!strcmp(how, "recvmmsg")) {
    struct mmsghdr mm[2] = {{.msg_hdr = {.msg_iov = &v[0], .msg_iovlen = 1}},
                            {.msg_hdr = {.msg_iov = &v[1], .msg_iovlen = 1}}};
    int r = recvmmsg(fd, mm, 2, MSG_WAITFORONE, NULL);
    if (r <= 0) return r;
    /* A stream's bytes go on from one message to the next, a short one included. */
    if (r == 2) memmove(out + mm[0].msg_len, v[1].iov_base, mm[1].msg_len);
    return (ssize_t)mm[0].msg_len + (r == 2 ? (ssize_t)mm[1].msg_len : 0);
  }
  if (!strcmp(how, "sys_read")) return syscall(SYS_read, fd, out, cap);
  if (!strcmp(how, "sys_readv") || !strcmp(how, "preadv2") || !strcmp(how, "sys_recvmsg")) {
    ssize_t r = !strcmp(how, "sys_readv")   ? syscall(SYS_readv, fd, v, 2)
                : !strcmp(how, "preadv2")   ? preadv2(fd, v, 2, -1, 0)
                                            : syscall(SYS_recvmsg, fd, &h, 0);
    return r;
  }
  if (!strcmp(how, "sys_recvfrom")) return syscall(SYS_recvfrom, fd, out, cap, 0, NULL, NULL);
  if (!strcmp(how, "splice") || !strcmp(how, "sys_splice")) {
    ssize_t r = !strcmp(how, "splice") ? splice(fd, NULL, pipe_fd[1], NULL, cap, 0)
                                       : syscall(SYS_splice, fd, NULL, pipe_fd[1], NULL, cap, 0);
    if (r <= 0) return r;
    for (ssize_t got = 0; got < r;) {
      ssize_t k = read(pipe_fd[0], out + got, (size_t)(r - got));
      if (k <= 0) die("read from the pipe");
      got += k;
    }
    return r;
  }
  die("unknown recv mode %s", how);
  return -1;
}

static void run_case(const char* send_how, const char* recv_how) {
  int tx = socket(AF_INET, SOCK_STREAM, 0);
  if (tx < 0 || connect(tx, (struct sockaddr*)&g_addr, sizeof g_addr)) die("connect");
  int rx = accept(g_listen, NULL, NULL);
  if (rx < 0) die("accept");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    close(rx);
    send_text(tx, send_how);
    _exit(0);
  }
  close(tx);
  int pipe_fd[2];
  if (pipe(pipe_fd)) die("pipe");
  size_t cap = g_len + 4096, got = 0;
  char* out = malloc(cap);
  if (!out) die("malloc");
  for (ssize_t r; got < cap && (r = recv_some(rx, recv_how, out + got, cap - got, pipe_fd)) != 0; got += (size_t)r)
    if (r < 0) die("%s", recv_how);
  close(rx);
  close(pipe_fd[0]);
  close(pipe_fd[1]);
  int status;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) die("sender failed");
  if (got != g_len + 6 || memcmp(out, "HELLO\n", 6) || memcmp(out + 6, g_text, g_len))
    die("%s -> %s: %zu bytes, expected %zu", send_how, recv_how, got, g_len + 6);
  free(out);
  printf("ok %s->%s\n", send_how, recv_how);
  fflush(stdout);
}

int main(void) {
  make_text();
  g_listen = socket(AF_INET, SOCK_STREAM, 0);
  memset(&g_addr, 0, sizeof g_addr);
  g_addr.sin_family = AF_INET;
  g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof g_addr;
  if (g_listen < 0 || bind(g_listen, (struct sockaddr*)&g_addr, sizeof g_addr) || listen(g_listen, 4) ||
      getsockname(g_listen, (struct sockaddr*)&g_addr, &l))
    die("listen");
  run_case("sendmmsg", "recvmmsg");
  run_case("sys_write", "sys_read");
  run_case("sys_writev", "sys_readv");
  run_case("sys_sendto", "sys_recvfrom");
  run_case("sys_sendmsg", "sys_recvmsg");
  run_case("pwritev2", "preadv2");
  run_case("sendmmsg", "splice");
  run_case("sys_write", "sys_splice");
  return 0;
}
