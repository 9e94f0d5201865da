/* SPDX-License-Identifier: MIT
   sv_static MODE ...: a statically linked program (LD_PRELOAD cannot reach it) for the
   supervised-mode tests. Modes:
     write PATH BYTES          write() BYTES in 64 KiB calls
     read PATH                 read() to EOF in 64 KiB calls (a pipe's short reads too)
     pread PATH                pread() to EOF in 64 KiB calls
     threads N PATH BYTES      N threads each write() BYTES/N to PATH (O_APPEND)
     fork N PATH BYTES         N child processes each write() BYTES/N to PATH (O_APPEND)
     send BYTES                sendto() BYTES over a socketpair in 64 KiB calls; a child
                               recvfrom()s them (both supervised)
     exec PROG ARGS...         execv() PROG (a dynamic program stays supervised)
     calls N                   N one-byte write()s to /dev/null (the cost of a call)
     rawthreads N PATH BYTES   N threads (up to 1000), all started before any writes,
                               each make one raw write system call of BYTES to PATH
                               (O_APPEND): Go's thread per held call (issue 49)
     writev PATH BYTES         writev() BYTES in 64 KiB calls of two 32 KiB pieces
     nodump MODE ARGS...       prctl(PR_SET_DUMPABLE, 0) (a hardened daemon), then MODE
     sum CALL PATH BS [direct] reads PATH (- for stdin) to EOF in BS calls of CALL (read, pread, readv,
                               preadv, preadv2: the vectored ones in two pieces, BS/2
                               and the rest), O_DIRECT if asked (a page-aligned buffer);
                               adds "sum=" (FNV-1a of the bytes read, in order) and
                               "ns_per_call=" (protect: the supervisor times these)
     sumsig CALL PATH BS [direct]  sum, with SIGALRM (SA_RESTART) every 100 us: calls
                               interrupted and restarted; adds "sigs=" (signals taken)
     tsum N PATH BS [direct]   N threads (up to 64) pread() PATH in BS pieces (piece k by
                               thread k % N, all at once), into one copy of the file;
                               prints its "sum=" as sum does
   Prints "bytes=N secs=S" (the bytes this process moved); calls adds "ns_per_call=". */
// build-flags: -static -pthread
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload_util.h"

static char buf[65536];

static long long write_all(int fd, long long total) {
  long long done = 0;
  while (done < total) {
    size_t n = total - done < (long long)sizeof buf ? (size_t)(total - done) : sizeof buf;
    ssize_t w = write(fd, buf, n);
    if (w <= 0) die("write");
    done += w;
  }
  return done;
}

struct job {
  const char* path;
  long long bytes;
};

static void* thread_main(void* arg) {
  struct job* j = arg;
  int fd = open(j->path, O_WRONLY | O_APPEND);
  if (fd < 0) die("open %s", j->path);
  write_all(fd, j->bytes);
  close(fd);
  return NULL;
}

static pthread_barrier_t raw_start;
static int raw_fd;
static char* raw_buf;
static long long raw_bytes;

static void* raw_main(void* arg) {
  (void)arg;
  pthread_barrier_wait(&raw_start);
  if (syscall(SYS_write, raw_fd, raw_buf, (size_t)raw_bytes) != raw_bytes) die("raw write");
  return NULL;
}

static volatile sig_atomic_t sigs;
static void on_alarm(int s) {
  (void)s;
  ++sigs;
}

struct tjob {
  int fd, n, k;
  size_t bs;
  long long size;
  char* copy;
  long long calls;
};

static void* tsum_main(void* arg) {
  struct tjob* j = arg;
  char* b = NULL;
  if (posix_memalign((void**)&b, 4096, j->bs)) die("posix_memalign");
  for (long long off = (long long)j->k * (long long)j->bs; off < j->size; off += (long long)j->n * (long long)j->bs) {
    ssize_t r = pread(j->fd, b, j->bs, off);
    ++j->calls;
    if (r < 0) die("pread");
    memcpy(j->copy + off, b, (size_t)r);
  }
  free(b);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s write|read|pread|threads|fork|send|exec ...\n", argv[0]);
    return 2;
  }
  const char* mode = argv[1];
  memset(buf, 's', sizeof buf);
  double t0 = now_s();
  long long moved = 0;
  if (!strcmp(mode, "nodump") && argc >= 3) {
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) die("prctl");
    ++argv, --argc;
    mode = argv[1];
  }
  if (!strcmp(mode, "write") && argc == 4) {
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open %s", argv[2]);
    moved = write_all(fd, size_arg(argv[3]));
  } else if (!strcmp(mode, "writev") && argc == 4) {
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open %s", argv[2]);
    long long total = size_arg(argv[3]);
    while (moved < total) {
      struct iovec v[2] = {{buf, sizeof buf / 2}, {buf + sizeof buf / 2, sizeof buf / 2}};
      ssize_t w = writev(fd, v, 2);
      if (w <= 0) die("writev");
      moved += w;
    }
  } else if ((!strcmp(mode, "read") || !strcmp(mode, "pread")) && argc == 3) {
    int fd = strcmp(argv[2], "-") ? open(argv[2], O_RDONLY) : 0;
    if (fd < 0) die("open %s", argv[2]);
    for (;;) {
      ssize_t r = mode[0] == 'p' ? pread(fd, buf, sizeof buf, moved) : read(fd, buf, sizeof buf);
      if (r < 0) die("read");
      if (r == 0) break;
      moved += r;
    }
  } else if ((!strcmp(mode, "threads") || !strcmp(mode, "fork")) && argc == 5) {
    int n = atoi(argv[2]);
    if (n < 1 || n > 64) die("bad N");
    int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("open %s", argv[3]);
    close(fd);
    struct job j = {argv[3], size_arg(argv[4]) / n};
    if (mode[0] == 't') {
      pthread_t t[64];
      for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, thread_main, &j);
      for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
    } else {
      for (int i = 0; i < n; ++i)
        if (fork() == 0) {
          thread_main(&j);
          _exit(0);
        }
      for (int i = 0; i < n; ++i) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) die("child failed");
      }
    }
    moved = j.bytes * n;
  } else if (!strcmp(mode, "rawthreads") && argc == 5) {
    int n = atoi(argv[2]);
    if (n < 1 || n > 1000) die("bad N");
    raw_fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    raw_bytes = size_arg(argv[4]);
    raw_buf = malloc((size_t)raw_bytes);
    if (raw_fd < 0 || !raw_buf) die("open %s", argv[3]);
    memset(raw_buf, 'r', (size_t)raw_bytes);
    pthread_barrier_init(&raw_start, NULL, (unsigned)n + 1);
    pthread_t* t = calloc((size_t)n, sizeof *t);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    for (int i = 0; i < n; ++i)
      if (!t || pthread_create(&t[i], &at, raw_main, NULL)) die("pthread_create");
    t0 = now_s();
    pthread_barrier_wait(&raw_start);
    for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
    moved = raw_bytes * n;
  } else if (!strcmp(mode, "send") && argc == 3) {
    long long total = size_arg(argv[2]);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) die("socketpair");
    pid_t kid = fork();
    if (kid == 0) {
      close(sv[0]);
      long long got = 0;
      for (;;) {
        ssize_t r = recvfrom(sv[1], buf, sizeof buf, 0, NULL, NULL);
        if (r < 0) die("recvfrom");
        if (r == 0) break;
        got += r;
      }
      _exit(got == total ? 0 : 3);
    }
    close(sv[1]);
    while (moved < total) {
      size_t n = total - moved < (long long)sizeof buf ? (size_t)(total - moved) : sizeof buf;
      ssize_t w = sendto(sv[0], buf, n, 0, NULL, 0);
      if (w <= 0) die("sendto");
      moved += w;
    }
    close(sv[0]);
    int st;
    if (waitpid(kid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) die("receiver lost data");
  } else if (!strcmp(mode, "calls") && argc == 3) {
    long long n = size_arg(argv[2]);
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0 || n < 1) die("open /dev/null");
    for (long long i = 0; i < n; ++i)
      if (write(fd, buf, 1) != 1) die("write");
    double secs = now_s() - t0;
    printf("bytes=%lld secs=%.4f ns_per_call=%.1f\n", n, secs, secs * 1e9 / (double)n);
    return 0;
  } else if ((!strcmp(mode, "sum") || !strcmp(mode, "sumsig")) &&
             (argc == 5 || (argc == 6 && !strcmp(argv[5], "direct")))) {
    const char* call = argv[2];
    if (mode[3] == 's') {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = on_alarm;
      sa.sa_flags = SA_RESTART;
      struct itimerval it = {{0, 100}, {0, 100}};
      if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &it, NULL)) die("setitimer");
    }
    size_t bs = (size_t)size_arg(argv[4]);
    int fd = strcmp(argv[3], "-") ? open(argv[3], O_RDONLY | (argc == 6 ? O_DIRECT : 0)) : 0;
    char* b = NULL;
    if (fd < 0 || bs < 2 || posix_memalign((void**)&b, 4096, bs)) die("open %s", argv[3]);
    unsigned long long h = 1469598103934665603ull;
    long long ncalls = 0;
    for (;;) {
      struct iovec v[2] = {{b, bs / 2}, {b + bs / 2, bs - bs / 2}};
      ssize_t r;
      if (!strcmp(call, "read")) r = read(fd, b, bs);
      else if (!strcmp(call, "pread")) r = pread(fd, b, bs, moved);
      else if (!strcmp(call, "readv")) r = readv(fd, v, 2);
      else if (!strcmp(call, "preadv")) r = preadv(fd, v, 2, moved);
      else if (!strcmp(call, "preadv2")) r = preadv2(fd, v, 2, moved, 0);
      else die("bad call %s", call);
      ++ncalls;
      if (r < 0) die("%s", call);
      if (r == 0) break;
      for (ssize_t i = 0; i < r; ++i) h = (h ^ (unsigned char)b[i]) * 1099511628211ull;
      moved += r;
    }
    double secs = now_s() - t0;
    printf("bytes=%lld secs=%.4f sum=%016llx calls=%lld ns_per_call=%.1f sigs=%d\n", moved, secs, h, ncalls,
           secs * 1e9 / (double)ncalls, (int)sigs);
    return 0;
  } else if (!strcmp(mode, "tsum") && (argc == 5 || (argc == 6 && !strcmp(argv[5], "direct")))) {
    int n = atoi(argv[2]);
    int fd = open(argv[3], O_RDONLY | (argc == 6 ? O_DIRECT : 0));
    long long size = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
    char* copy = size > 0 ? malloc((size_t)size) : NULL;
    if (n < 1 || n > 64 || !copy) die("tsum %s", argv[3]);
    struct tjob j[64];
    pthread_t t[64];
    for (int i = 0; i < n; ++i) {
      j[i] = (struct tjob){fd, n, i, (size_t)size_arg(argv[4]), size, copy, 0};
      if (pthread_create(&t[i], NULL, tsum_main, &j[i])) die("pthread_create");
    }
    long long ncalls = 0;
    for (int i = 0; i < n; ++i) {
      pthread_join(t[i], NULL);
      ncalls += j[i].calls;
    }
    unsigned long long h = 1469598103934665603ull;
    for (long long i = 0; i < size; ++i) h = (h ^ (unsigned char)copy[i]) * 1099511628211ull;
    double secs = now_s() - t0;
    printf("bytes=%lld secs=%.4f sum=%016llx calls=%lld ns_per_call=%.1f\n", size, secs, h, ncalls,
           secs * 1e9 / (double)ncalls);
    return 0;
  } else if (!strcmp(mode, "exec") && argc >= 3) {
    execv(argv[2], argv + 2);
    die("execv %s", argv[2]);
  } else {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  report(moved, now_s() - t0);
  return 0;
}
