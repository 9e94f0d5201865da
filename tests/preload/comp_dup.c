/* SPDX-License-Identifier: MIT
   A compressed connection reached through duplicated descriptors (issue 12). Run under
   libbonsai with BONSAI_COMPRESS_TO=127.0.0.1:* and BONSAI_COMPRESS_ACCEPT=1. Written
   through both numbers, the stream used to get raw bytes inside the frames (the peer
   reset it). Cases, each over a fresh connection, ~1 MiB of text, exact bytes:
     send: write() through the socket, then alternately through it and a duplicate
       (dup, dup2, dup3, F_DUPFD_CLOEXEC), the original closed first and the rest sent
       through the duplicate;
     recv: small reads through the socket, then through a duplicate that epoll
       (level-triggered) watches: decoded bytes the library holds must wake it.
   Prints "ok CASE" per case; exits 1 at the first failure. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/epoll.h>

#include "comp_conn.h"

static int duplicate(int fd, const char* how) {
  if (!strcmp(how, "dup")) return dup(fd);
  if (!strcmp(how, "dup2")) return dup2(fd, 200);
  if (!strcmp(how, "dup3")) return dup3(fd, 201, O_CLOEXEC);
  if (!strcmp(how, "F_DUPFD_CLOEXEC")) return fcntl(fd, F_DUPFD_CLOEXEC, 300);
  die("unknown way %s", how);
  return -1;
}

static void put(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r <= 0) die("write on fd %d", fd);
    p += r;
    n -= (size_t)r;
  }
}

/* Through fd and its duplicate in turn, then (fd closed) through the duplicate. */
static void send_both(int fd, const char* how) {
  put(fd, g_text, 4000);
  int d = duplicate(fd, how);
  if (d < 0) die("%s", how);
  size_t off = 4000, half = g_len / 2;
  for (int k = 0; off < half; ++k) {
    size_t n = half - off < 3000 ? half - off : 3000;
    put(k % 2 ? d : fd, g_text + off, n);
    off += n;
  }
  if (close(fd)) die("close the original");
  put(d, g_text + off, g_len - off);
  close(d);
}

static size_t get(int fd, char* out, size_t n) {
  ssize_t r = read(fd, out, n);
  if (r < 0) die("read on fd %d", fd);
  return (size_t)r;
}

/* Small reads through fd, then through a duplicate that epoll watches. */
static size_t recv_both(int fd, const char* how, char* out, size_t cap) {
  size_t got = 0;
  while (got < 5000) {
    size_t r = get(fd, out + got, 100);
    if (!r) die("early end of stream");
    got += r;
  }
  int d = duplicate(fd, how);
  if (d < 0) die("%s", how);
  int ep = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = d};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, d, &ev)) die("epoll");
  for (;;) {
    struct epoll_event out_ev;
    int k = epoll_wait(ep, &out_ev, 1, 5000);
    if (k < 0) die("epoll_wait");
    if (k == 0) die("epoll_wait on the duplicate: nothing for 5 s with %zu of %zu bytes read", got, g_len);
    size_t r = get(d, out + got, cap - got < 700 ? cap - got : 700);
    if (!r) break;
    got += r;
  }
  close(ep);
  close(d);
  close(fd);
  return got;
}

static void run_case(const char* how, int on_send) {
  char name[64];
  snprintf(name, sizeof name, "%s %s", on_send ? "send" : "recv", how);
  int tx, rx;
  pid_t pid = comp_connect_fork(&tx, &rx);
  if (pid == 0) {
    if (on_send) send_both(tx, how);
    else put(tx, g_text, g_len), close(tx);
    _exit(0);
  }
  size_t cap = g_len + 4096, got = 0;
  char* out = malloc(cap);
  if (!out) die("malloc");
  if (on_send) {
    for (size_t r; (r = get(rx, out + got, cap - got)) > 0;) got += r;
    close(rx);
  } else {
    got = recv_both(rx, how, out, cap);
  }
  comp_check(pid, name, out, got, "", 0);
  free(out);
}

int main(void) {
  comp_setup();
  const char* ways[] = {"dup", "dup2", "dup3", "F_DUPFD_CLOEXEC"};
  for (int i = 0; i < 4; ++i) run_case(ways[i], 1);
  run_case("dup", 0);
  run_case("F_DUPFD_CLOEXEC", 0);
  return 0;
}
