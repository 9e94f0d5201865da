/* SPDX-License-Identifier: MIT
   Many compressed connections at once (issue 8 item 1). Run under libbonsai:
     comp_many_conns recv PORT_FILE N [FD_BASE]  (BONSAI_COMPRESS_ACCEPT=1)
     comp_many_conns send PORT FIRST COUNT [FD_BASE]  (BONSAI_COMPRESS_TO=...)
   The receiver accepts all N connections and holds them open together; it reads the
   first bytes of every one (so all are decoding at once), then reads each to its end
   and checks the exact bytes (a line naming the
   connection, a small raw frame, then compressible text). A connection whose first
   read fails with ECONNRESET counts as reset (the library's answer when memory runs
   out). It prints "conns=N ok=K framed_raw=K wrong=K reset=K"; exit 0 if every
   connection was decoded exactly or reset. With FD_BASE each socket is moved to a
   descriptor number >= FD_BASE (fcntl F_DUPFD) before use: numbers past any fixed
   table. The sender connects COUNT connections (ids FIRST..), writes, closes. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload_util.h"

enum { kBody = 6000 };

/* The bytes connection `id` carries: "conn ID\n" (its own raw frame) then text. */
static size_t expected(int id, char* buf, size_t cap, size_t* head) {
  int n = snprintf(buf, cap, "conn %d\n", id);
  *head = (size_t)n;
  size_t i = (size_t)n;
  for (int line = 0; i < (size_t)n + kBody; ++line) {
    char l[96];
    int k = snprintf(l, sizeof l, "connection %d line %d: the quick brown fox jumps over the lazy dog\n", id, line);
    for (int j = 0; j < k && i < (size_t)n + kBody && i < cap; ++j) buf[i++] = l[j];
  }
  return i;
}

static void raise_nofile(void) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

static int move_high(int fd, int base) {
  if (base <= 0) return fd;
  int h = fcntl(fd, F_DUPFD, base);
  if (h < 0) die("F_DUPFD %d", base);
  close(fd);
  return h;
}

static int do_recv(const char* port_file, int n, int base) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (bind(l, (struct sockaddr*)&a, sizeof a) || listen(l, 4096) || getsockname(l, (struct sockaddr*)&a, &al))
    die("listen");
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
  FILE* f = fopen(tmp, "w");
  if (!f) die("fopen %s", tmp);
  fprintf(f, "%d\n", ntohs(a.sin_port));
  fclose(f);
  rename(tmp, port_file);
  int* fds = calloc((size_t)n, sizeof *fds);
  for (int i = 0; i < n; ++i) {
    int c = accept(l, NULL, NULL);
    if (c < 0) die("accept %d of %d", i, n);
    fds[i] = move_high(c, base ? base + i : 0);
  }
  static char got[kBody + 4096], want[kBody + 4096];
  int ok = 0, raw = 0, wrong = 0, reset = 0;
  char(*first)[8] = calloc((size_t)n, sizeof *first);
  char* was_reset = calloc((size_t)n, 1);
  for (int i = 0; i < n; ++i) {  /* every connection starts decoding before any ends */
    size_t len = 0;
    while (len < sizeof first[i]) {
      ssize_t r = read(fds[i], first[i] + len, sizeof first[i] - len);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && errno == ECONNRESET && len == 0) was_reset[i] = 1;
      if (r <= 0) break;
      len += (size_t)r;
    }
    if (was_reset[i]) {
      ++reset;
      continue;
    }
    if (len < sizeof first[i]) die("connection %d ended after %zu bytes", i, len);
  }
  for (int i = 0; i < n; ++i) {
    if (was_reset[i]) {
      close(fds[i]);
      continue;
    }
    size_t len = sizeof first[i];
    memcpy(got, first[i], len);
    for (;;) {
      ssize_t r = read(fds[i], got + len, sizeof got - len);
      if (r > 0) {
        len += (size_t)r;
        if (len == sizeof got) break;
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      break;
    }
    int id = -1;
    size_t head = 0;
    if (len >= 4 && (unsigned char)got[0] == 0x89 && memcmp(got + 1, "BNZ", 3) == 0) {
      ++raw;
    } else if (sscanf(got, "conn %d", &id) == 1 && id >= 0) {
      size_t wl = expected(id, want, sizeof want, &head);
      if (wl == len && memcmp(want, got, len) == 0) ++ok;
      else ++wrong;
    } else {
      ++wrong;
    }
    if ((raw || wrong) && raw + wrong == 1) fprintf(stderr, "connection %d (fd %d): %zu bytes, starting %02x %02x %02x %02x\n",
                                              i, fds[i], len, (unsigned char)got[0], (unsigned char)got[1],
                                              (unsigned char)got[2], (unsigned char)got[3]);
    close(fds[i]);
  }
  printf("conns=%d ok=%d framed_raw=%d wrong=%d reset=%d\n", n, ok, raw, wrong, reset);
  return ok + reset == n && !raw && !wrong ? 0 : 1;
}

/* @return 0, or -1 when the receiver reset the connection (EPIPE, ECONNRESET): a receiver
   out of memory resets what it cannot decode, and a sender may still be writing to it
   then (the receiver counts those; the sender goes on with the others). */
static int write_all(int fd, const char* p, size_t n) {
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EPIPE || errno == ECONNRESET)) return -1;
    if (r <= 0) die("write");
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

static int do_send(int port, int first, int count, int base) {
  signal(SIGPIPE, SIG_IGN);  /* a reset connection: EPIPE, not the end of the sender */
  int* fds = calloc((size_t)count, sizeof *fds);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (int i = 0; i < count; ++i) {
    int s = move_high(socket(AF_INET, SOCK_STREAM, 0), base ? base + i : 0);
    if (connect(s, (struct sockaddr*)&a, sizeof a)) die("connect %d", i);
    fds[i] = s;
  }
  static char want[kBody + 4096];
  int cut = 0;  /* connections whose body never went: the receiver reset them first */
  for (int i = 0; i < count; ++i) {
    size_t head;
    size_t len = expected(first + i, want, sizeof want, &head);
    if (write_all(fds[i], want, head) != 0) ++cut;  /* under 1 KiB: a raw frame */
    else if (write_all(fds[i], want + head, len - head) != 0 && len - head > 0) ++cut;
  }
  for (int i = 0; i < count; ++i) close(fds[i]);
  printf("cut=%d\n", cut);
  return 0;
}

int main(int argc, char** argv) {
  raise_nofile();
  if (argc >= 4 && !strcmp(argv[1], "recv")) return do_recv(argv[2], atoi(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
  if (argc >= 5 && !strcmp(argv[1], "send"))
    return do_send(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
  fprintf(stderr, "usage: comp_many_conns recv PORT_FILE N [FD_BASE] | send PORT FIRST COUNT [FD_BASE]\n");
  return 2;
}
