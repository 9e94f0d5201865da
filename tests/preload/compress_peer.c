// SPDX-License-Identifier: MIT
// compress_peer: one end of a TCP transfer on 127.0.0.1 for the compression tests and
// bench. Either end may listen or connect, send a file or receive into one, with
// random or fixed call sizes and a choice of calls and readiness waits.
//   compress_peer (--listen PORT [--port-file F] | --connect PORT) (--send FILE | --recv OUT)
//                 [--conns K] [--size N|rand] [--api read|recv|recvfrom|recvmsg|readv|write|send|writev|sendmsg|sendfile]
//                 [--wait block|poll|select|epoll] [--wait-ms MS] [--linger MS] [--seed S] [--duration MS]
//                 [--nonblock [lt|et|poll|select]]
// --nonblock: the socket is non-blocking from its set-up (SOCK_NONBLOCK on connect,
// accept4 SOCK_NONBLOCK). A sender writes whenever the socket is writable, waiting
// for EPOLLOUT with epoll (level-triggered, or edge-triggered with `et`) after
// EAGAIN (or for POLLOUT with poll or select: `poll`, `select`), like an event-loop server; then
// shutdown(SHUT_WR) and close. A receiver
// waits after EAGAIN with --wait (poll if `block`).
// --linger: the sender keeps the stream open MS after its last write; --wait-ms: the
// receiver's poll/select/epoll timeout (a timeout is an error); --expect N: the
// receiver stops after N bytes instead of at end of stream; --duration: the sender
// (write calls) goes round the file again until MS have passed since its first write.
// Prints one line: bytes=<total> seconds=<s> mibps=<MiB/s> (a sender adds its longest
// write call max_call_ms, its EAGAIN answers and its readiness waits). The sender's seconds run
// from its connect to its last connection's shutdown: write calls read the file into
// memory before that (reading 64 MiB took ~60 ms, 2% of a 3 s run, counted against
// the transfer until 2026-11-24).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int o_listen = -1, o_connect = -1, o_conns = 1, o_size = -1, o_linger_ms = 0, o_wait_ms = 10000, o_duration_ms = 0;
static long long o_expect = -1;
static const char *o_send, *o_recv, *o_port_file, *o_api = "", *o_wait = "block";
static unsigned o_seed = 1;
static int o_nonblock = 0;  // 1: level-triggered, 2: edge-triggered, 3: poll, 4: select
static long long g_total;
// A sender's write calls: the longest one (a non-blocking call must never wait for a
// cap), the EAGAIN answers and the readiness waits after them.
static long long g_max_call_ns, g_eagain, g_waits;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void die(const char* what) { perror(what); exit(1); }

static size_t next_size(unsigned* st, size_t max) {
  if (o_size > 0) return (size_t)o_size < max ? (size_t)o_size : max;
  // Log-uniform from 1 B to max, so small and huge calls both occur.
  unsigned r = rand_r(st);
  int bits = 1 + r % 22;  // up to 4 MiB
  size_t n = 1 + (size_t)rand_r(st) % ((size_t)1 << bits);
  return n < max ? n : max;
}

static void wait_readable(int fd, int ep) {
  if (!strcmp(o_wait, "poll")) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, o_wait_ms) <= 0) die("poll timeout");
  } else if (!strcmp(o_wait, "select")) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    struct timeval tv = {o_wait_ms / 1000, (o_wait_ms % 1000) * 1000};
    if (select(fd + 1, &r, NULL, NULL, &tv) <= 0) die("select timeout");
  } else if (!strcmp(o_wait, "epoll")) {
    struct epoll_event ev;
    if (epoll_wait(ep, &ev, 1, o_wait_ms) <= 0) die("epoll timeout");
  }
}

// A non-blocking sender's wait after EAGAIN: EPOLLOUT on its epoll set, or POLLOUT
// with poll or select (--nonblock poll|select: ep is the socket).
static void wait_writable(int ep) {
  __atomic_add_fetch(&g_waits, 1, __ATOMIC_RELAXED);
  if (o_nonblock == 4) {
    fd_set w;
    FD_ZERO(&w);
    FD_SET(ep, &w);
    struct timeval tv = {o_wait_ms / 1000, (o_wait_ms % 1000) * 1000};
    int r;
    while ((r = select(ep + 1, NULL, &w, NULL, &tv)) < 0 && errno == EINTR) {}
    if (r <= 0) die("select timeout (write set)");
    return;
  }
  if (o_nonblock == 3) {
    struct pollfd p = {ep, POLLOUT, 0};
    int r;
    while ((r = poll(&p, 1, o_wait_ms)) < 0 && errno == EINTR) {}
    if (r <= 0) die("poll timeout (POLLOUT)");
    return;
  }
  struct epoll_event ev;
  int r;
  while ((r = epoll_wait(ep, &ev, 1, o_wait_ms)) < 0 && errno == EINTR) {}
  if (r <= 0) die("epoll timeout (EPOLLOUT)");
}

static long long mono_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
// After a write call that began at t0 and returned r.
static void note_call(long long t0, ssize_t r) {
  long long d = mono_now_ns() - t0, m = __atomic_load_n(&g_max_call_ns, __ATOMIC_RELAXED);
  while (d > m && !__atomic_compare_exchange_n(&g_max_call_ns, &m, d, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
  if (r < 0 && errno == EAGAIN) __atomic_add_fetch(&g_eagain, 1, __ATOMIC_RELAXED);
}

static ssize_t do_read(int fd, char* b, size_t n) {
  if (!strcmp(o_api, "recv")) return recv(fd, b, n, 0);
  if (!strcmp(o_api, "recvfrom")) return recvfrom(fd, b, n, 0, NULL, NULL);
  if (!strcmp(o_api, "recvmsg") || !strcmp(o_api, "readv")) {
    size_t h = n / 2;
    struct iovec v[2] = {{b, h}, {b + h, n - h}};
    if (!strcmp(o_api, "readv")) return readv(fd, v, 2);
    struct msghdr m = {0};
    m.msg_iov = v;
    m.msg_iovlen = 2;
    return recvmsg(fd, &m, 0);
  }
  return read(fd, b, n);
}

static ssize_t do_write(int fd, const char* b, size_t n) {
  if (!strcmp(o_api, "send")) return send(fd, b, n, 0);
  if (!strcmp(o_api, "writev") || !strcmp(o_api, "sendmsg")) {
    size_t h = n / 3;
    struct iovec v[2] = {{(void*)b, h}, {(void*)(b + h), n - h}};
    if (!strcmp(o_api, "writev")) return writev(fd, v, 2);
    struct msghdr m = {0};
    m.msg_iov = v;
    m.msg_iovlen = 2;
    return sendmsg(fd, &m, 0);
  }
  return write(fd, b, n);
}

// The file for write calls, read before the clock starts (load_send_file).
static char* g_data;
static size_t g_data_len;

static void load_send_file(void) {
  int in = open(o_send, O_RDONLY);
  struct stat st;
  if (in < 0 || fstat(in, &st)) die(o_send);
  g_data_len = (size_t)st.st_size;
  g_data = malloc(g_data_len + 1);
  if (!g_data) die("malloc");
  for (size_t got = 0; got < g_data_len;) {
    ssize_t r = read(in, g_data + got, g_data_len - got);
    if (r <= 0) die("read input");
    got += (size_t)r;
  }
  close(in);
}

static void run_send(int fd, int idx) {
  int in = open(o_send, O_RDONLY);
  if (in < 0) die(o_send);
  struct stat st;
  fstat(in, &st);
  long long sent = 0;
  int ep = -1;
  if (o_nonblock >= 3) {
    ep = fd;  // poll or select on the socket itself
  } else if (o_nonblock) {
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLOUT | (o_nonblock == 2 ? EPOLLET : 0), .data.u64 = 7};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }
  if (!strcmp(o_api, "sendfile")) {
    off_t off = 0;
    while (off < st.st_size) {
      long long c0 = mono_now_ns();
      ssize_t r = sendfile(fd, in, &off, (size_t)(st.st_size - off));
      note_call(c0, r);
      if (r < 0 && o_nonblock && errno == EAGAIN) {
        wait_writable(ep);
        continue;
      }
      if (r <= 0) die("sendfile");
      sent += r;
    }
  } else {
    const char* data = g_data;
    if (g_data_len != (size_t)st.st_size) die("input changed size");
    unsigned seed = o_seed + (unsigned)idx;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t pos = 0; pos < (size_t)st.st_size;) {
      size_t n = next_size(&seed, (size_t)st.st_size - pos);
      long long c0 = mono_now_ns();
      ssize_t r = do_write(fd, data + pos, n);
      note_call(c0, r);
      if (r < 0 && o_nonblock && errno == EAGAIN) {
        wait_writable(ep);
        continue;
      }
      if (r <= 0) die("write");
      pos += (size_t)r;
      sent += r;
      if (o_duration_ms > 0) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms >= o_duration_ms) break;
        if (pos == (size_t)st.st_size) pos = 0;  // round the file again
      }
    }
  }
  close(in);
  if (o_linger_ms) usleep((useconds_t)o_linger_ms * 1000);  // keep the stream open: no EOF to wake poll
  shutdown(fd, SHUT_WR);
  if (ep >= 0 && ep != fd) close(ep);
  pthread_mutex_lock(&g_mu);
  g_total += sent;
  pthread_mutex_unlock(&g_mu);
}

static void run_recv(int fd, int idx) {
  char path[4096];
  if (o_conns > 1) snprintf(path, sizeof path, "%s.%d", o_recv, idx);
  else snprintf(path, sizeof path, "%s", o_recv);
  int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) die(path);
  size_t cap = 1 << 20;
  char* buf = malloc(cap);
  unsigned seed = o_seed * 7 + (unsigned)idx;
  int ep = -1;
  if (!strcmp(o_wait, "epoll")) {
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) die("epoll_ctl");
  }
  long long got = 0;
  while (o_expect < 0 || got < o_expect) {
    wait_readable(fd, ep);
    size_t n = next_size(&seed, cap);
    ssize_t r = do_read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && o_nonblock && errno == EAGAIN) {
      if (!strcmp(o_wait, "block")) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, o_wait_ms) <= 0) die("poll timeout");
      }
      continue;  // the other waits come before each read
    }
    if (r < 0) die("read");
    if (r == 0) break;
    for (ssize_t w = 0; w < r;) {
      ssize_t k = write(out, buf + w, (size_t)(r - w));
      if (k <= 0) die("write output");
      w += k;
    }
    got += r;
  }
  close(out);
  if (ep >= 0) close(ep);
  free(buf);
  pthread_mutex_lock(&g_mu);
  g_total += got;
  pthread_mutex_unlock(&g_mu);
}

struct job { int fd, idx; };
static void* worker(void* arg) {
  struct job* j = arg;
  if (o_send) run_send(j->fd, j->idx);
  else run_recv(j->fd, j->idx);
  close(j->fd);
  return NULL;
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--listen")) o_listen = atoi(v), ++i;
    else if (!strcmp(a, "--connect")) o_connect = atoi(v), ++i;
    else if (!strcmp(a, "--port-file")) o_port_file = v, ++i;
    else if (!strcmp(a, "--send")) o_send = v, ++i;
    else if (!strcmp(a, "--recv")) o_recv = v, ++i;
    else if (!strcmp(a, "--conns")) o_conns = atoi(v), ++i;
    else if (!strcmp(a, "--size")) o_size = strcmp(v, "rand") ? atoi(v) : -1, ++i;
    else if (!strcmp(a, "--api")) o_api = v, ++i;
    else if (!strcmp(a, "--wait")) o_wait = v, ++i;
    else if (!strcmp(a, "--seed")) o_seed = (unsigned)atoi(v), ++i;
    else if (!strcmp(a, "--duration")) o_duration_ms = atoi(v), ++i;
    else if (!strcmp(a, "--linger")) o_linger_ms = atoi(v), ++i;
    else if (!strcmp(a, "--expect")) o_expect = atoll(v), ++i;
    else if (!strcmp(a, "--wait-ms")) o_wait_ms = atoi(v), ++i;
    else if (!strcmp(a, "--nonblock")) {
      o_nonblock = 1;
      if (!strcmp(v, "et")) o_nonblock = 2, ++i;
      else if (!strcmp(v, "poll")) o_nonblock = 3, ++i;
      else if (!strcmp(v, "select")) o_nonblock = 4, ++i;
      else if (!strcmp(v, "lt")) ++i;
    }
    else { fprintf(stderr, "compress_peer: unknown option %s\n", a); return 2; }
  }
  if ((o_listen < 0) == (o_connect < 0) || !o_send == !o_recv || o_conns < 1 || o_conns > 64) {
    fprintf(stderr, "usage: see the header of tests/preload/compress_peer.c\n");
    return 2;
  }
  if (o_send && strcmp(o_api, "sendfile")) load_send_file();
  struct timespec t0, t1;
  int fds[64];
  if (o_listen >= 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o_listen)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr*)&sa, sizeof sa) || listen(ls, 64)) die("bind/listen");
    socklen_t sl = sizeof sa;
    getsockname(ls, (struct sockaddr*)&sa, &sl);
    if (o_port_file) {
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s.tmp", o_port_file);
      FILE* f = fopen(tmp, "w");
      fprintf(f, "%d\n", ntohs(sa.sin_port));
      fclose(f);
      rename(tmp, o_port_file);
    }
    for (int i = 0; i < o_conns; ++i) {
      fds[i] = o_nonblock ? accept4(ls, NULL, NULL, SOCK_NONBLOCK) : accept(ls, NULL, NULL);
      while (fds[i] < 0 && o_nonblock && errno == EAGAIN) {  // the listener blocks: not expected
        struct pollfd p = {ls, POLLIN, 0};
        poll(&p, 1, o_wait_ms);
        fds[i] = accept4(ls, NULL, NULL, SOCK_NONBLOCK);
      }
      if (fds[i] < 0) die("accept");
      if (i == 0) clock_gettime(CLOCK_MONOTONIC, &t0);
    }
    close(ls);
  } else {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < o_conns; ++i) {
      fds[i] = socket(AF_INET, SOCK_STREAM | (o_nonblock ? SOCK_NONBLOCK : 0), 0);
      struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o_connect)};
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (connect(fds[i], (struct sockaddr*)&sa, sizeof sa)) {
        if (!o_nonblock || errno != EINPROGRESS) die("connect");
        struct pollfd p = {fds[i], POLLOUT, 0};  // an event loop's connect
        int err = 0;
        socklen_t el = sizeof err;
        if (poll(&p, 1, o_wait_ms) != 1 || getsockopt(fds[i], SOL_SOCKET, SO_ERROR, &err, &el) || err) die("connect");
      }
    }
  }
  pthread_t th[64];
  struct job jobs[64];
  for (int i = 0; i < o_conns; ++i) {
    jobs[i] = (struct job){fds[i], i};
    if (o_conns == 1) worker(&jobs[i]);
    else pthread_create(&th[i], NULL, worker, &jobs[i]);
  }
  for (int i = 0; o_conns > 1 && i < o_conns; ++i) pthread_join(th[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("bytes=%lld seconds=%.3f mibps=%.2f", g_total, s, (double)g_total / s / 1048576.0);
  if (o_send) printf(" max_call_ms=%.2f eagain=%lld waits=%lld", (double)g_max_call_ns / 1e6, g_eagain, g_waits);
  printf("\n");
  return 0;
}
