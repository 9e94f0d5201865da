/* SPDX-License-Identifier: MIT
   nb_loop: a one-thread event loop writing to K non-blocking stream sockets under a
   write cap, the way nginx or libuv do: write until EAGAIN (or a short write), then
   wait for readiness. Modes: lt, et, oneshot (epoll), poll, select; "pipe" makes the
   descriptors pipes instead of sockets. A light descriptor writes 512 bytes in the
   middle of the run. Readers are threads draining the other ends (reads unlimited).
   Prints: per-descriptor bytes when the first finished (min/max ratio), the light
   write's latency, readiness calls and EAGAINs seen, and the seconds taken.
   usage: nb_loop MODE K BYTES_EACH [pipe|unix] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "preload_util.h"

#define MAXK 64
#define PIECE (64 << 10)

static char g_buf[PIECE];
static int g_rd[MAXK + 1], g_wr[MAXK + 1];

static void* drain(void* arg) {
  int fd = (int)(long)arg;
  char b[PIECE];
  for (;;) {
    ssize_t r = read(fd, b, sizeof b);
    if (r == 0) return NULL;
    if (r < 0 && errno != EINTR) die("reader");
  }
}

/* ---- "threads": 4 threads, one epoll set, one-shot registrations ---- */
#define THREADS 4
static int g_ep, g_k;
static long long g_each, g_sent[MAXK];
static int g_done;
static long g_waits, g_eagains;
static long long g_at_first[MAXK];
static double g_t_end;  /* when the last descriptor finished (threads notice later) */
static int g_first = -1;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void* serve(void* arg) {
  (void)arg;
  for (;;) {
    if (__atomic_load_n(&g_done, __ATOMIC_ACQUIRE) >= g_k) return NULL;
    struct epoll_event ev;
    __atomic_fetch_add(&g_waits, 1, __ATOMIC_RELAXED);
    int n = epoll_wait(g_ep, &ev, 1, 200);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("epoll_wait");
    if (n == 0) continue;
    int i = (int)ev.data.u32;
    for (;;) { /* this thread alone owns descriptor i until it re-arms it */
      long long left = g_each - g_sent[i];
      size_t want = left < PIECE ? (size_t)left : PIECE;
      ssize_t w = write(g_wr[i], g_buf, want);
      if (w < 0 && errno == EAGAIN) {
        __atomic_fetch_add(&g_eagains, 1, __ATOMIC_RELAXED);
        break;
      }
      if (w < 0) die("write %d", i);
      g_sent[i] += w;
      if (g_sent[i] == g_each) break;
    }
    if (g_sent[i] == g_each) {
      pthread_mutex_lock(&g_mu);
      if (g_first < 0) {
        g_first = i;
        for (int j = 0; j < g_k; ++j) g_at_first[j] = __atomic_load_n(&g_sent[j], __ATOMIC_RELAXED);
      }
      pthread_mutex_unlock(&g_mu);
      if (__atomic_add_fetch(&g_done, 1, __ATOMIC_ACQ_REL) == g_k) g_t_end = now_s();
      continue;
    }
    struct epoll_event re = {EPOLLOUT | EPOLLONESHOT, {.u32 = (uint32_t)i}};
    if (epoll_ctl(g_ep, EPOLL_CTL_MOD, g_wr[i], &re)) die("re-arm");
  }
}

static int threads_mode(int k, long long each) {
  g_k = k;
  g_each = each;
  g_ep = epoll_create1(0);
  for (int i = 0; i < k; ++i) {
    struct epoll_event ev = {EPOLLOUT | EPOLLONESHOT, {.u32 = (uint32_t)i}};
    if (epoll_ctl(g_ep, EPOLL_CTL_ADD, g_wr[i], &ev)) die("epoll_ctl");
  }
  double t0 = now_s();
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; ++t)
    if (pthread_create(&th[t], NULL, serve, NULL)) die("thread");
  for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);
  double secs = g_t_end - t0;
  long long lo = each, hi = 0;
  for (int i = 0; i < k; ++i) {
    if (g_at_first[i] < lo) lo = g_at_first[i];
    if (g_at_first[i] > hi) hi = g_at_first[i];
  }
  for (int i = 0; i <= k; ++i) close(g_wr[i]);
  printf("fair=%.3f light_ms=0 waits=%ld eagains=%ld ", hi ? (double)lo / (double)hi : 0, g_waits, g_eagains);
  report(each * k, secs);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 4) die("usage: nb_loop MODE K BYTES_EACH [pipe|unix]");
  const char* mode = argv[1];
  int k = atoi(argv[2]);
  long long each = size_arg(argv[3]);
  int use_pipe = argc > 4 && !strcmp(argv[4], "pipe");
  if (k < 1 || k > MAXK) die("K");
  memset(g_buf, 'x', sizeof g_buf);
  pthread_t th[MAXK + 1];
  for (int i = 0; i <= k; ++i) {  /* index k: the light descriptor */
    int p[2];
    if (use_pipe ? pipe2(p, O_NONBLOCK) : socketpair(AF_UNIX, SOCK_STREAM, 0, p)) die("pair");
    g_wr[i] = use_pipe ? p[1] : p[0];
    g_rd[i] = use_pipe ? p[0] : p[1];
    if (use_pipe) fcntl(g_rd[i], F_SETFL, 0);
    else fcntl(g_wr[i], F_SETFL, O_NONBLOCK);
    if (pthread_create(&th[i], NULL, drain, (void*)(long)g_rd[i])) die("thread");
  }
  if (!strcmp(mode, "threads")) {
    threads_mode(k, each);
    for (int i = 0; i <= k; ++i) pthread_join(th[i], NULL);
    return 0;
  }
  int et = !strcmp(mode, "et"), oneshot = !strcmp(mode, "oneshot");
  int use_epoll = et || oneshot || !strcmp(mode, "lt");
  int ep = -1;
  if (use_epoll) {
    ep = epoll_create1(0);
    for (int i = 0; i < k; ++i) {
      struct epoll_event ev = {EPOLLOUT | (et ? EPOLLET : 0) | (oneshot ? EPOLLONESHOT : 0), {.u32 = (uint32_t)i}};
      if (epoll_ctl(ep, EPOLL_CTL_ADD, g_wr[i], &ev)) die("epoll_ctl");
    }
  }
  long long sent[MAXK] = {0};
  int ready[MAXK];
  for (int i = 0; i < k; ++i) ready[i] = 1;
  int done = 0, first_done = -1;
  long long at_first[MAXK];
  long waits = 0, eagains = 0;
  double t0 = now_s(), light_lat = -1;
  int light_sent = 0;
  while (done < k) {
    for (int i = 0; i < k; ++i) { /* write each ready descriptor until EAGAIN or short */
      while (ready[i] && sent[i] < each) {
        size_t want = each - sent[i] < PIECE ? (size_t)(each - sent[i]) : PIECE;
        ssize_t w = write(g_wr[i], g_buf, want);
        if (w < 0 && errno == EAGAIN) {
          ++eagains;
          ready[i] = 0;
          break;
        }
        if (w < 0) die("write %d", i);
        sent[i] += w;
        if (sent[i] == each) {
          if (first_done < 0) {
            first_done = i;
            memcpy(at_first, sent, sizeof at_first);
          }
          ++done;
          if (use_epoll) epoll_ctl(ep, EPOLL_CTL_DEL, g_wr[i], NULL);
        }
        if ((size_t)w < want && et) ready[i] = 0; /* nginx: a short write waits for an edge */
      }
    }
    if (!light_sent && now_s() - t0 > 0.2) { /* a light descriptor: one small response */
      double l0 = now_s();
      for (int got = 0; got < 512;) {
        ssize_t w = write(g_wr[k], g_buf, 512 - got);
        if (w > 0) got += w;
        else if (w < 0 && errno == EAGAIN) {
          struct pollfd p = {g_wr[k], POLLOUT, 0};
          poll(&p, 1, 1000);
        } else die("light write");
      }
      light_lat = now_s() - l0;
      light_sent = 1;
    }
    if (done == k) break;
    ++waits;
    if (waits > 2000000) die("busy loop: %ld readiness calls", waits);
    if (use_epoll) {
      struct epoll_event evs[MAXK];
      int n = epoll_wait(ep, evs, MAXK, 2000);
      if (n < 0) die("epoll_wait");
      if (n == 0) die("epoll_wait timed out with %d of %d done", done, k);
      for (int j = 0; j < n; ++j) {
        int i = (int)evs[j].data.u32;
        if (evs[j].events & EPOLLOUT) ready[i] = 1;
        if (oneshot && sent[i] < each) {
          struct epoll_event ev = {EPOLLOUT | EPOLLONESHOT, {.u32 = (uint32_t)i}};
          epoll_ctl(ep, EPOLL_CTL_MOD, g_wr[i], &ev);
        }
      }
    } else if (!strcmp(mode, "poll")) {
      struct pollfd p[MAXK];
      int idx[MAXK], m = 0;
      for (int i = 0; i < k; ++i)
        if (sent[i] < each) p[m] = (struct pollfd){g_wr[i], POLLOUT, 0}, idx[m++] = i;
      int n = poll(p, (nfds_t)m, 2000);
      if (n <= 0) die("poll: %d", n);
      for (int j = 0; j < m; ++j)
        if (p[j].revents & POLLOUT) ready[idx[j]] = 1;
    } else if (!strcmp(mode, "select")) {
      fd_set w;
      FD_ZERO(&w);
      int maxfd = 0;
      for (int i = 0; i < k; ++i)
        if (sent[i] < each) {
          FD_SET(g_wr[i], &w);
          if (g_wr[i] > maxfd) maxfd = g_wr[i];
        }
      struct timeval tv = {2, 0};
      int n = select(maxfd + 1, NULL, &w, NULL, &tv);
      if (n <= 0) die("select: %d", n);
      for (int i = 0; i < k; ++i)
        if (sent[i] < each && FD_ISSET(g_wr[i], &w)) ready[i] = 1;
    } else {
      die("mode %s", mode);
    }
  }
  double secs = now_s() - t0;
  long long lo = each, hi = 0;
  for (int i = 0; i < k; ++i) {
    if (at_first[i] < lo) lo = at_first[i];
    if (at_first[i] > hi) hi = at_first[i];
  }
  if (getenv("NB_VERBOSE"))
    for (int i = 0; i < k; ++i) fprintf(stderr, "fd %d: %lld at first done\n", i, at_first[i]);
  for (int i = 0; i <= k; ++i) close(g_wr[i]);
  for (int i = 0; i <= k; ++i) pthread_join(th[i], NULL);
  printf("fair=%.3f light_ms=%.2f waits=%ld eagains=%ld ", hi ? (double)lo / (double)hi : 0, light_lat * 1000,
         waits, eagains);
  report(each * k + 512, secs);
  return 0;
}
