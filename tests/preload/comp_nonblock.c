/* SPDX-License-Identifier: MIT
   A non-blocking sender's endings (issue 12 item 2). Run under libbonsai with
   BONSAI_COMPRESS_TO; the peer (tests/preload/compress_peer --recv) checks the bytes.
     comp_nonblock PORT FILE MODE
   Connects with SOCK_NONBLOCK (a small SO_SNDBUF, so the socket fills and the
   library's send buffer holds bytes), writes FILE in 128 KiB writes (its random
   tail's last frame, raw, is larger than the room a slowed receiver leaves, so it is
   still buffered at the ending), waiting with poll for POLLOUT after EAGAIN, then
   ends by MODE:
     shutdown  shutdown(SHUT_WR), then close
     close     close at once (the buffered bytes go out at close)
     pollin    waits only for POLLIN (the peer closes after the last byte: EOF)
     epollin   the same with epoll (EPOLLIN only, edge-triggered)
     epollin2  the same with epoll_pwait2 (glibc 2.35+: a timespec timeout)
     selectin  the same with select (readable only); its waits after EAGAIN use
               select's write set too. First select, pselect and ppoll with invalid
               timeouts must fail with EINVAL (the library holds bytes then)
     fork      at the first EAGAIN forks: the child writes once (must fail, EPIPE),
               closes and exits; the parent goes on (no byte sent twice)
     dontwait  a blocking socket written with send(MSG_DONTWAIT)
     exit      exit(0) without closing (the kernel would still send what it holds)
     threads   4 threads write 4 KiB records ("t=T n=N " + FILE's text) to the one
               socket, each whole or refused (EAGAIN), while a 0.5 ms timer's
               handler polls the socket (re-entering the library on a thread that
               may hold the connection); then shutdown. The peer's output must hold
               every record of every thread, whole, each thread's in order.
   Prints "sent=N eagain=K" and exits 0, or 1 on an unexpected error. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char* what) {
  perror(what);
  exit(1);
}

/* Records start kStride bytes apart (more than a record): overlapping slices made the
   stream compress ~50x with history, and the socket never filled. */
enum { kThreads = 4, kRecords = 300, kRecord = 4096, kStride = 8209 };
static int g_fd;
static const char* g_text;
static size_t g_text_len;
static long long g_eagain;

static void on_alarm(int sig) {
  (void)sig;
  int e = errno;
  struct pollfd p = {g_fd, POLLIN, 0};
  poll(&p, 1, 0);
  errno = e;
}

static void* record_writer(void* arg) {
  int t = (int)(long)arg;
  char rec[kRecord];
  for (int n = 0; n < kRecords; ++n) {
    int h = snprintf(rec, sizeof rec, "t=%d n=%06d ", t, n);
    size_t from = ((size_t)(t * kRecords + n) * kStride) % (g_text_len - kRecord);
    memcpy(rec + h, g_text + from, kRecord - (size_t)h);
    for (;;) {
      ssize_t r = write(g_fd, rec, kRecord);
      if (r == kRecord) break;
      if (r >= 0) {
        fprintf(stderr, "thread %d: a %d-byte record was taken in part (%zd)\n", t, kRecord, r);
        exit(1);
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN) die("write");
      __atomic_fetch_add(&g_eagain, 1, __ATOMIC_RELAXED);
      struct pollfd p = {g_fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) == 0) die("poll POLLOUT");
    }
  }
  return NULL;
}

static void run_threads(int fd, const char* text, size_t len) {
  g_fd = fd;
  g_text = text;
  g_text_len = len;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 500}, {0, 500}};
  setitimer(ITIMER_REAL, &it, NULL);
  pthread_t th[kThreads];
  for (long t = 0; t < kThreads; ++t) pthread_create(&th[t], NULL, record_writer, (void*)t);
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: comp_nonblock PORT FILE MODE\n");
    return 2;
  }
  const char* mode = argv[3];
  int dontwait = !strcmp(mode, "dontwait");
  signal(SIGPIPE, SIG_IGN);
  int in = open(argv[2], O_RDONLY);
  struct stat st;
  if (in < 0 || fstat(in, &st)) die("input");
  char* data = malloc((size_t)st.st_size + 1);
  if (!data || read(in, data, (size_t)st.st_size) != st.st_size) die("read input");
  close(in);
  int fd = socket(AF_INET, SOCK_STREAM | (dontwait ? 0 : SOCK_NONBLOCK), 0);
  int small = 32768;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&sa, sizeof sa)) {
    if (errno != EINPROGRESS) die("connect");
    struct pollfd p = {fd, POLLOUT, 0};
    int err = 0;
    socklen_t el = sizeof err;
    if (poll(&p, 1, 10000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err) die("connect");
  }
  long long sent = 0, eagain = 0;
  int forked = 0;
  if (!strcmp(mode, "threads")) {
    if (st.st_size < 2 * kRecord) die("input too small");
    run_threads(fd, data, (size_t)st.st_size);
    sent = (long long)kThreads * kRecords * kRecord;
    eagain = g_eagain;
    st.st_size = 0;  // the loop below has nothing to write
  }
  for (size_t pos = 0; pos < (size_t)st.st_size;) {
    size_t n = (size_t)st.st_size - pos < 131072 ? (size_t)st.st_size - pos : 131072;
    ssize_t r = dontwait ? send(fd, data + pos, n, MSG_DONTWAIT) : write(fd, data + pos, n);
    if (r < 0 && errno == EAGAIN) {
      ++eagain;
      if (!strcmp(mode, "fork") && !forked) {
        forked = 1;
        pid_t c = fork();
        if (c < 0) die("fork");
        if (c == 0) {  // the parent's buffered bytes are not the child's to send
          ssize_t w = write(fd, "x", 1);
          if (w != -1 || errno != EPIPE) {
            fprintf(stderr, "child: write gave %zd (errno %d), want -1/EPIPE\n", w, errno);
            _exit(3);
          }
          close(fd);
          exit(0);
        }
        int status;
        if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status)) die("child");
      }
      if (!strcmp(mode, "selectin")) {
        fd_set w;
        FD_ZERO(&w);
        FD_SET(fd, &w);
        struct timeval tv = {10, 0};
        if (select(fd + 1, NULL, &w, NULL, &tv) != 1 || !FD_ISSET(fd, &w)) die("select writable");
        continue;
      }
      struct pollfd p = {fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) != 1) die("poll POLLOUT");
      continue;
    }
    if (r <= 0) die("write");
    pos += (size_t)r;
    sent += r;
  }
  if (!strcmp(mode, "pollin")) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 20000) != 1) die("poll POLLIN (the peer never got the last bytes)");
  } else if (!strcmp(mode, "epollin") || !strcmp(mode, "epollin2")) {
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 9};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) die("epoll_ctl");
    struct timespec ts = {20, 0};
    int r = mode[7] ? epoll_pwait2(ep, &ev, 1, &ts, NULL) : epoll_wait(ep, &ev, 1, 20000);
    if (r != 1) die("epoll_wait EPOLLIN (the peer never got the last bytes)");
    close(ep);
  } else if (!strcmp(mode, "selectin")) {
    fd_set r;
    FD_ZERO(&r);
    FD_SET(fd, &r);
    /* Invalid timeouts, while the library most likely holds bytes: EINVAL, as without
       it (not "no timeout"), and the bytes still go out below. */
    struct timeval bad_tv = {0, -1};
    struct timespec bad_ts = {0, 1000000000};
    struct pollfd p = {fd, POLLIN, 0};
    errno = 0;
    if (select(fd + 1, &r, NULL, NULL, &bad_tv) != -1 || errno != EINVAL) die("select with tv_usec -1: not EINVAL");
    FD_SET(fd, &r);
    errno = 0;
    if (pselect(fd + 1, &r, NULL, NULL, &bad_ts, NULL) != -1 || errno != EINVAL) die("pselect with tv_nsec 1e9: not EINVAL");
    FD_SET(fd, &r);
    errno = 0;
    if (ppoll(&p, 1, &bad_ts, NULL) != -1 || errno != EINVAL) die("ppoll with tv_nsec 1e9: not EINVAL");
    struct timeval tv = {20, 0};
    if (select(fd + 1, &r, NULL, NULL, &tv) != 1) die("select readable (the peer never got the last bytes)");
  } else if (!strcmp(mode, "exit")) {
    printf("sent=%lld eagain=%lld\n", sent, eagain);
    fflush(stdout);
    exit(0);
  } else if (strcmp(mode, "close") != 0) {
    if (shutdown(fd, SHUT_WR)) die("shutdown");
  }
  close(fd);
  printf("sent=%lld eagain=%lld\n", sent, eagain);
  free(data);
  return 0;
}
