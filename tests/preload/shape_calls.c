/* SPDX-License-Identifier: MIT
   shape_calls MODE SIZE DIR: makes ONE call of the family MODE moving SIZE bytes (files
   in DIR; sockets between two threads of this process) and prints the seconds that
   single call took, after checking the data arrived intact. Under a cap on that call
   the one call must take its time (issue #8 item 6: vectored, message and stdio calls
   were charged after the fact). The other side of a socket uses calls the test does
   not cap. Modes: readv writev preadv preadv64 pwritev pwritev64 preadv2 preadv2_cur
   pwritev2_cur preadv64v2 pwritev64v2 writev_sock sys_read sys_writev sys_preadv2
   sendmsg recvmsg sendmmsg recvmmsg sys_sendmsg sys_recvmmsg dgram_big writev_nb
   fwrite fwrite_items fwrite_unlocked fread fread_unlocked fputs fgets getline
   peek_recv peek_recvfrom peek_recvmsg; a vector mode with the suffix _tiny uses 1000
   small entries. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload_util.h"

#define NIOV 300   /* more entries than one piece of the library holds */
#define NIOV_TINY 1000 /* MODE_tiny: 1000 equal small entries (pieces run out of entries first) */
#define MSG 65536  /* datagram size of the *mmsg modes */

static const char* g_mode;
static int g_tiny;
static size_t g_size;
static char *g_src, *g_dst;
static int g_peer = -1; /* the uncapped side of a socket */

static unsigned char pattern(size_t i) { return (unsigned char)(i * 131 + i / 4093); }

static void fill(char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = (char)pattern(i);
}

static void check(const char* p, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if ((unsigned char)p[i] != pattern(i)) die("%s: byte %zu of %zu differs", what, i, n);
}

static void check_moved(ssize_t r, size_t want, const char* what) {
  if (r < 0) die("%s failed", what);
  if ((size_t)r != want) die("%s moved %zd of %zu bytes", what, r, want);
}

/* A vector over p[0, n): NIOV entries of uneven sizes, some empty. */
static struct iovec g_iov[NIOV_TINY];
static int make_iov(char* p, size_t n) {
  if (g_tiny) {
    for (int k = 0; k < NIOV_TINY; ++k) {
      g_iov[k].iov_base = p + k * (n / NIOV_TINY);
      g_iov[k].iov_len = k < NIOV_TINY - 1 ? n / NIOV_TINY : n - (NIOV_TINY - 1) * (n / NIOV_TINY);
    }
    return NIOV_TINY;
  }
  size_t step = n / (NIOV - 20), done = 0;
  int k = 0;
  for (; k < NIOV - 1 && done < n; ++k) {
    size_t len = (k % 7 == 3) ? 0 : step / 2 + (size_t)(k * 7919) % step;
    if (len > n - done) len = n - done;
    g_iov[k].iov_base = p + done;
    g_iov[k].iov_len = len;
    done += len;
  }
  g_iov[k].iov_base = p + done;
  g_iov[k].iov_len = n - done;
  return k + 1;
}

static void write_all(int fd, const char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, p + done, n - done);
    if (w <= 0) die("write_all");
    done += (size_t)w;
  }
}

static void read_all(int fd, char* p, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t r = read(fd, p + done, n - done);
    if (r <= 0) die("read_all after %zu of %zu", done, n);
    done += (size_t)r;
  }
}

/* ---- socket peers (uncapped calls: read/write/recv/send) ---- */

static void* drain_stream(void* arg) { /* reads g_size bytes into g_dst */
  (void)arg;
  read_all(g_peer, g_dst, g_size);
  return NULL;
}
static void* feed_stream(void* arg) {
  (void)arg;
  write_all(g_peer, g_src, g_size);
  return NULL;
}
static void* drain_dgrams(void* arg) { /* datagrams of MSG bytes, in order */
  (void)arg;
  for (size_t done = 0; done < g_size;) {
    ssize_t r = recv(g_peer, g_dst + done, g_size - done, 0);
    if (r <= 0) die("drain_dgrams");
    done += (size_t)r;
  }
  return NULL;
}
static void* feed_dgrams(void* arg) {
  (void)arg;
  for (size_t done = 0; done < g_size; done += MSG)
    if (send(g_peer, g_src + done, MSG, 0) != MSG) die("feed_dgrams");
  return NULL;
}

static int pair(int type) {
  int sp[2];
  if (socketpair(AF_UNIX, type, 0, sp)) die("socketpair");
  g_peer = sp[1];
  return sp[0];
}

static int tcp_pair(void) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr*)&a, &al))
    die("listen");
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a)) die("connect");
  g_peer = accept(ls, NULL, NULL);
  if (g_peer < 0) die("accept");
  close(ls);
  return s;
}

static pthread_t g_thread;
static void peer_start(void* (*fn)(void*)) {
  if (pthread_create(&g_thread, NULL, fn, NULL)) die("pthread_create");
}
static void peer_join(void) { pthread_join(g_thread, NULL); }

/* ---- modes ---- */

static int file_with_data(const char* dir) { /* DIR/src holding the pattern */
  char path[4096];
  snprintf(path, sizeof path, "%s/src", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open %s", path);
  write_all(fd, g_src, g_size);
  lseek(fd, 0, SEEK_SET);
  return fd;
}

static int empty_file(const char* dir, char* path, size_t cap) {
  snprintf(path, cap, "%s/dst", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open %s", path);
  return fd;
}

static void check_file(int fd) {
  memset(g_dst, 0, g_size);
  if (pread(fd, g_dst, g_size, 0) != (ssize_t)g_size) die("file is short");
  check(g_dst, g_size, g_mode);
}

static FILE* stream_of(const char* dir, const char* how, int with_data, const char* data, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/stdio", dir);
  if (with_data) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open");
    write_all(fd, data, n);
    close(fd);
  }
  FILE* f = fopen(path, how);
  if (!f) die("fopen %s", path);
  return f;
}

static void check_stdio_file(const char* dir, const char* want, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/stdio", dir);
  int fd = open(path, O_RDONLY);
  if (fd < 0) die("open");
  char* got = malloc(n + 1);
  if (!got || read(fd, got, n + 1) != (ssize_t)n) die("%s: file size", g_mode);
  if (memcmp(got, want, n)) die("%s: file content differs", g_mode);
  free(got);
  close(fd);
}

/* Text of n bytes: the pattern mapped to letters, optionally ending in '\n'. */
static char* text(size_t n, int newline) {
  char* t = malloc(n + 1);
  if (!t) die("malloc");
  for (size_t i = 0; i < n; ++i) t[i] = (char)('a' + pattern(i) % 26);
  if (newline) t[n - 1] = '\n';
  t[n] = 0;
  return t;
}

static double run(const char* dir) {
  const char* m = g_mode;
  double t0;
  ssize_t r;
  char path[4096];
  int fd, s;

  /* -- vectored calls on files -- */
  if (!strcmp(m, "readv") || !strcmp(m, "preadv") || !strcmp(m, "preadv64") || !strcmp(m, "preadv2") ||
      !strcmp(m, "preadv2_cur") || !strcmp(m, "preadv64v2") || !strcmp(m, "sys_read") ||
      !strcmp(m, "sys_preadv2")) {
    fd = file_with_data(dir);
    int k = make_iov(g_dst, g_size);
    t0 = now_s();
    if (!strcmp(m, "readv")) r = readv(fd, g_iov, k);
    else if (!strcmp(m, "preadv")) r = preadv(fd, g_iov, k, 0);
    else if (!strcmp(m, "preadv64")) r = preadv64(fd, g_iov, k, 0);
    else if (!strcmp(m, "preadv2")) r = preadv2(fd, g_iov, k, 0, 0);
    else if (!strcmp(m, "preadv2_cur")) r = preadv2(fd, g_iov, k, -1, 0);
    else if (!strcmp(m, "preadv64v2")) r = preadv64v2(fd, g_iov, k, 0, 0);
    else if (!strcmp(m, "sys_read")) r = syscall(SYS_read, fd, g_dst, g_size);
    else r = syscall(SYS_preadv2, fd, g_iov, k, 0L, 0L, 0);
    double secs = now_s() - t0;
    check_moved(r, g_size, m);
    check(g_dst, g_size, m);
    if ((!strcmp(m, "readv") || !strcmp(m, "preadv2_cur") || !strcmp(m, "sys_read")) &&
        lseek(fd, 0, SEEK_CUR) != (off_t)g_size)
      die("%s: file position %lld", m, (long long)lseek(fd, 0, SEEK_CUR));
    return secs;
  }
  if (!strcmp(m, "writev") || !strcmp(m, "pwritev") || !strcmp(m, "pwritev64") || !strcmp(m, "pwritev2_cur") ||
      !strcmp(m, "pwritev64v2") || !strcmp(m, "sys_writev")) {
    fd = empty_file(dir, path, sizeof path);
    int k = make_iov(g_src, g_size);
    t0 = now_s();
    if (!strcmp(m, "writev")) r = writev(fd, g_iov, k);
    else if (!strcmp(m, "pwritev")) r = pwritev(fd, g_iov, k, 0);
    else if (!strcmp(m, "pwritev64")) r = pwritev64(fd, g_iov, k, 0);
    else if (!strcmp(m, "pwritev2_cur")) r = pwritev2(fd, g_iov, k, -1, 0);
    else if (!strcmp(m, "pwritev64v2")) r = pwritev64v2(fd, g_iov, k, 0, 0);
    else r = syscall(SYS_writev, fd, g_iov, k);
    double secs = now_s() - t0;
    check_moved(r, g_size, m);
    check_file(fd);
    return secs;
  }

  /* -- stream sockets -- */
  if (!strcmp(m, "writev_sock") || !strcmp(m, "sendmsg") || !strcmp(m, "sys_sendmsg")) {
    s = pair(SOCK_STREAM);
    peer_start(drain_stream);
    int k = make_iov(g_src, g_size);
    struct msghdr h = {.msg_iov = g_iov, .msg_iovlen = (size_t)k};
    t0 = now_s();
    if (!strcmp(m, "writev_sock")) r = writev(s, g_iov, k);
    else if (!strcmp(m, "sendmsg")) r = sendmsg(s, &h, 0);
    else r = syscall(SYS_sendmsg, s, &h, 0);
    double secs = now_s() - t0;
    check_moved(r, g_size, m);
    peer_join();
    check(g_dst, g_size, m);
    return secs;
  }
  if (!strcmp(m, "recvmsg")) {
    s = pair(SOCK_STREAM);
    peer_start(feed_stream);
    int k = make_iov(g_dst, g_size);
    struct msghdr h = {.msg_iov = g_iov, .msg_iovlen = (size_t)k};
    t0 = now_s();
    r = recvmsg(s, &h, MSG_WAITALL);
    double secs = now_s() - t0;
    check_moved(r, g_size, m);
    peer_join();
    check(g_dst, g_size, m);
    return secs;
  }
  if (!strcmp(m, "writev_nb")) { /* non-blocking writev calls on TCP: the loop must hold the cap */
    s = tcp_pair();
    fcntl(s, F_SETFL, O_NONBLOCK);
    peer_start(drain_stream);
    t0 = now_s();
    for (size_t done = 0; done < g_size;) {
      struct iovec v[2] = {{g_src + done, (g_size - done) / 2}, {g_src + done + (g_size - done) / 2, (g_size - done) - (g_size - done) / 2}};
      r = writev(s, v, 2);
      if (r < 0 && errno == EAGAIN) {
        struct pollfd p = {.fd = s, .events = POLLOUT};
        poll(&p, 1, 1000);
        continue;
      }
      if (r <= 0) die("non-blocking writev after %zu", done);
      done += (size_t)r;
    }
    double secs = now_s() - t0;
    peer_join();
    check(g_dst, g_size, m);
    return secs;
  }

  /* -- datagrams: messages are never cut -- */
  if (!strcmp(m, "sendmmsg") || !strcmp(m, "recvmmsg") || !strcmp(m, "sys_recvmmsg")) {
    int send_side = !strcmp(m, "sendmmsg");
    s = pair(SOCK_DGRAM);
    int sz = 4 * MSG;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(g_peer, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    unsigned n = (unsigned)(g_size / MSG);
    struct mmsghdr* mm = calloc(n, sizeof *mm);
    struct iovec* v = calloc(n, sizeof *v);
    if (!mm || !v) die("calloc");
    for (unsigned i = 0; i < n; ++i) {
      v[i].iov_base = (send_side ? g_src : g_dst) + (size_t)i * MSG;
      v[i].iov_len = MSG;
      mm[i].msg_hdr.msg_iov = &v[i];
      mm[i].msg_hdr.msg_iovlen = 1;
    }
    peer_start(send_side ? drain_dgrams : feed_dgrams);
    t0 = now_s();
    int got;
    if (send_side) got = sendmmsg(s, mm, n, 0);
    else if (!strcmp(m, "recvmmsg")) got = recvmmsg(s, mm, n, 0, NULL);
    else got = (int)syscall(SYS_recvmmsg, s, mm, n, 0, NULL);
    double secs = now_s() - t0;
    if (got != (int)n) die("%s: %d of %u messages", m, got, n);
    for (unsigned i = 0; i < n; ++i)
      if (mm[i].msg_len != MSG) die("%s: message %u has %u bytes", m, i, mm[i].msg_len);
    peer_join();
    check(g_dst, g_size, m);
    return secs;
  }
  if (!strcmp(m, "dgram_big")) { /* one datagram larger than a chunk: paid before, never cut */
    s = pair(SOCK_DGRAM);
    int sz = (int)g_size * 2;
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(g_peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    t0 = now_s();
    r = send(s, g_src, g_size, 0);
    double secs = now_s() - t0;
    check_moved(r, g_size, m);
    r = recv(g_peer, g_dst, g_size + 1, 0);
    check_moved(r, g_size, "the datagram");
    check(g_dst, g_size, m);
    return secs;
  }

  /* -- stdio -- */
  if (!strncmp(m, "fwrite", 6)) {
    FILE* f = stream_of(dir, "w", 0, NULL, 0);
    t0 = now_s();
    size_t n;
    if (!strcmp(m, "fwrite")) n = fwrite(g_src, 1, g_size, f);
    else if (!strcmp(m, "fwrite_unlocked")) n = fwrite_unlocked(g_src, 1, g_size, f);
    else n = fwrite(g_src, 4096, g_size / 4096, f) * 4096;
    double secs = now_s() - t0;
    if (n != g_size) die("%s: %zu of %zu bytes", m, n, g_size);
    if (fclose(f)) die("fclose");
    check_stdio_file(dir, g_src, g_size);
    return secs;
  }
  if (!strncmp(m, "fread", 5)) {
    FILE* f = stream_of(dir, "r", 1, g_src, g_size);
    t0 = now_s();
    size_t n = !strcmp(m, "fread") ? fread(g_dst, 1, g_size, f) : fread_unlocked(g_dst, 1, g_size, f);
    double secs = now_s() - t0;
    if (n != g_size) die("%s: %zu of %zu bytes", m, n, g_size);
    check(g_dst, g_size, m);
    fclose(f);
    return secs;
  }
  if (!strcmp(m, "fputs")) {
    char* t = text(g_size, 0);
    FILE* f = stream_of(dir, "w", 0, NULL, 0);
    t0 = now_s();
    int rc = fputs(t, f);
    double secs = now_s() - t0;
    if (rc == EOF) die("fputs");
    if (fclose(f)) die("fclose");
    check_stdio_file(dir, t, g_size);
    free(t);
    return secs;
  }
  if (!strcmp(m, "fgets") || !strcmp(m, "getline")) {
    char* t = text(g_size, 1); /* one line of g_size bytes, then a second short line */
    char* file = malloc(g_size + 7);
    memcpy(file, t, g_size);
    memcpy(file + g_size, "after\n", 7);
    FILE* f = stream_of(dir, "r", 1, file, g_size + 6);
    char* line = NULL;
    size_t cap = 0;
    t0 = now_s();
    if (!strcmp(m, "fgets")) {
      line = malloc(g_size + 64);
      if (!fgets(line, (int)g_size + 64, f)) die("fgets");
    } else {
      if (getline(&line, &cap, f) != (ssize_t)g_size) die("getline");
    }
    double secs = now_s() - t0;
    if (strlen(line) != g_size || memcmp(line, t, g_size)) die("%s: line differs (%zu bytes)", m, strlen(line));
    char rest[16];
    if (!fgets(rest, sizeof rest, f) || strcmp(rest, "after\n")) die("%s: the next line differs", m);
    fclose(f);
    free(line);
    free(file);
    free(t);
    return secs;
  }

  /* -- peeks: each piece is peeked, then read -- */
  if (!strncmp(m, "peek_", 5)) {
    s = pair(SOCK_STREAM);
    peer_start(feed_stream);
    size_t piece = 16384;
    char* peeked = malloc(piece);
    t0 = now_s();
    for (size_t done = 0; done < g_size;) {
      size_t want = g_size - done < piece ? g_size - done : piece;
      struct iovec v = {peeked, want};
      struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
      if (!strcmp(m, "peek_recv")) r = recv(s, peeked, want, MSG_PEEK);
      else if (!strcmp(m, "peek_recvfrom")) r = recvfrom(s, peeked, want, MSG_PEEK, NULL, NULL);
      else r = recvmsg(s, &h, MSG_PEEK);
      if (r <= 0) die("peek after %zu", done);
      ssize_t got;
      if (!strcmp(m, "peek_recv")) got = recv(s, g_dst + done, (size_t)r, 0);
      else if (!strcmp(m, "peek_recvfrom")) got = recvfrom(s, g_dst + done, (size_t)r, 0, NULL, NULL);
      else {
        v.iov_base = g_dst + done;
        v.iov_len = (size_t)r;
        got = recvmsg(s, &h, 0);
      }
      if (got != r || memcmp(peeked, g_dst + done, (size_t)r)) die("read after peek differs at %zu", done);
      done += (size_t)got;
    }
    double secs = now_s() - t0;
    peer_join();
    check(g_dst, g_size, m);
    free(peeked);
    return secs;
  }
  fprintf(stderr, "shape_calls: unknown mode '%s'\n", m);
  exit(2);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: shape_calls MODE SIZE DIR\n");
    return 2;
  }
  static char mode[64];
  snprintf(mode, sizeof mode, "%s", argv[1]);
  size_t ml = strlen(mode);
  if (ml > 5 && !strcmp(mode + ml - 5, "_tiny")) {
    g_tiny = 1;
    mode[ml - 5] = 0;
  }
  g_mode = mode;
  g_size = (size_t)size_arg(argv[2]);
  g_src = malloc(g_size + 1);
  g_dst = malloc(g_size + 1);
  if (!g_src || !g_dst) die("malloc");
  fill(g_src, g_size);
  double secs = run(argv[3]);
  report((long long)g_size, secs);
  return 0;
}
