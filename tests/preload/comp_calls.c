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
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "comp_conn.h"

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
  char name[64];
  snprintf(name, sizeof name, "%s->%s", send_how, recv_how);
  int tx, rx;
  pid_t pid = comp_connect_fork(&tx, &rx);
  if (pid == 0) {
    send_text(tx, send_how);
    _exit(0);
  }
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
  comp_check(pid, name, out, got, "HELLO\n", 6);
  free(out);
}

int main(void) {
  comp_setup();
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
