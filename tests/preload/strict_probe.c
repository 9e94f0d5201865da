/* SPDX-License-Identifier: MIT
   strict_probe MODE ...: a dynamic program for the strict-mode tests (issue #39). Modes:
     raw PATH BYTES     write() BYTES in 64 KiB pieces through an inline-assembly
                        `syscall` instruction (no glibc, no wrapper: only the filter sees it)
     libc PATH BYTES    the same through glibc's write() (the library's marked calls)
     stdio PATH BYTES   the same through fwrite() (glibc's internal write(): the supervisor's)
     int80 PATH BYTES   the same through `int $0x80`: the 32-bit ABI's write from a 64-bit
                        program (a buffer mapped below 4 GiB)
     sendfile64 PATH BYTES  BYTES of PATH to /dev/null by the 32-bit ABI's sendfile64
                        (`int $0x80`, number 239), 64 KiB a call
     recvmmsg64 BYTES   BYTES through a socket pair, received by the 32-bit ABI's
                        recvmmsg_time64 (`int $0x80`, number 417), 64 KiB a call
     calls N            N one-byte write()s to /dev/null: prints ns_per_call= (the cost)
     checks             vfork, a data call in a signal handler, EINTR and SA_RESTART around a
                        blocking read, cancellation of a thread blocked in read(), errno of
                        failing calls: prints "ok NAME" each, exits 1 at the first failure
   The transfer modes print "bytes=N secs=S". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload_util.h"

static char buf[65536];

static long raw_write(long fd, const void* p, long n) {
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "0"((long)SYS_write), "D"(fd), "S"(p), "d"(n) : "rcx", "r11", "memory");
  return r;
}

static long int80_write(long fd, const void* p, long n) {
  long r;
  __asm__ volatile("int $0x80" : "=a"(r) : "0"(4L), "b"(fd), "c"(p), "d"(n) : "memory");
  return r;
}

static long int80_5(long nr, long a, long b, long c, long d, long e) {
  long r;
  __asm__ volatile("int $0x80" : "=a"(r) : "0"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e) : "memory");
  return r;
}

static void* low_map(size_t n) {  // the 32-bit ABI sees 32-bit addresses
  void* p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  if (p == MAP_FAILED) die("mmap below 4 GiB");
  return p;
}

static double secs_since(const struct timespec* a) {
  struct timespec b;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static int transfer(const char* mode, const char* path, long long total) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("open %s", path);
  FILE* f = strcmp(mode, "stdio") == 0 ? fdopen(fd, "w") : NULL;
  char* low = NULL;  // int80: the 32-bit ABI sees 32-bit addresses
  if (strcmp(mode, "int80") == 0) {
    low = mmap(NULL, sizeof buf, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    if (low == MAP_FAILED) die("mmap below 4 GiB");
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long long done = 0;
  while (done < total) {
    long n = total - done < (long long)sizeof buf ? (long)(total - done) : (long)sizeof buf;
    long w;
    if (f) w = (long)fwrite(buf, 1, (size_t)n, f);
    else if (low) w = int80_write(fd, low, n);
    else if (strcmp(mode, "raw") == 0) w = raw_write(fd, buf, n);
    else w = write(fd, buf, (size_t)n);
    if (w <= 0) die("write");
    done += w;
  }
  if (f && fclose(f) != 0) die("fclose");
  double s = secs_since(&t0);
  printf("bytes=%lld secs=%.3f\n", done, s);
  return 0;
}

static int sendfile64_i386(const char* path, long long total) {
  int in = open(path, O_RDONLY), out = open("/dev/null", O_WRONLY);
  if (in < 0 || out < 0) die("open %s", path);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long long done = 0;
  while (done < total) {
    long n = total - done < (64 << 10) ? (long)(total - done) : (64 << 10);
    long r = int80_5(239, out, in, 0, n, 0);  // sendfile64(out, in, NULL, n)
    if (r <= 0) {
      errno = r < 0 ? (int)-r : 0;
      die("sendfile64 (i386 239) after %lld bytes", done);
    }
    done += r;
  }
  printf("bytes=%lld secs=%.3f\n", done, secs_since(&t0));
  return 0;
}

struct feed {
  int fd;
  long long total;
};
static void* feed_socket(void* arg) {
  struct feed* f = arg;
  for (long long done = 0; done < f->total;) {
    long n = f->total - done < (long long)sizeof buf ? (long)(f->total - done) : (long)sizeof buf;
    ssize_t w = write(f->fd, buf, (size_t)n);
    if (w <= 0) die("write to the socket");
    done += w;
  }
  return NULL;
}

static int recvmmsg64_i386(long long total) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
  struct feed f = {sv[1], total};
  pthread_t t;
  pthread_create(&t, NULL, feed_socket, &f);
  // 32-bit layouts below 4 GiB: iovec {base, len}; mmsghdr {msghdr {name, namelen, iov,
  // iovlen, control, controllen, flags}, len}
  uint32_t* m = low_map(4096);
  char* data = low_map(sizeof buf);
  m[0] = (uint32_t)(uintptr_t)data, m[1] = sizeof buf;
  uint32_t* mm = m + 16;
  memset(mm, 0, 32);
  mm[2] = (uint32_t)(uintptr_t)m, mm[3] = 1;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long long done = 0;
  while (done < total) {
    long r = int80_5(417, sv[0], (long)(uintptr_t)mm, 1, 0, 0);  // recvmmsg_time64(fd, mm, 1, 0, NULL)
    if (r != 1 || mm[7] == 0) {
      errno = r < 0 ? (int)-r : 0;
      die("recvmmsg_time64 (i386 417) after %lld bytes", done);
    }
    done += mm[7];
  }
  pthread_join(t, NULL);
  printf("bytes=%lld secs=%.3f\n", done, secs_since(&t0));
  return 0;
}

static int fail_check(const char* what) {
  fprintf(stderr, "strict_probe: check %s failed (errno %d: %s)\n", what, errno, strerror(errno));
  return 1;
}

static int g_null = -1;
static void on_alarm(int sig) {
  (void)sig;
  int e = errno;
  (void)write(g_null, "h", 1);  // a data call from a signal handler
  errno = e;
}

static void alarm_in(long ms, int restart) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

struct later {
  int fd;
  long ms;
};
static void* write_later(void* arg) {
  struct later* l = arg;
  struct timespec ts = {l->ms / 1000, (l->ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
  (void)write(l->fd, "12345", 5);
  return NULL;
}

static void* read_forever(void* arg) {
  int fd = *(int*)arg;
  char c;
  for (;;) (void)read(fd, &c, 1);
  return NULL;
}

static int checks(void) {
  g_null = open("/dev/null", O_WRONLY);
  if (g_null < 0) return fail_check("open /dev/null");
  // vfork: the child's write goes through the wrapper in the parent's memory
  pid_t pid = vfork();
  if (pid == 0) {
    (void)write(g_null, "v", 1);
    _exit(7);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7) return fail_check("vfork");
  puts("ok vfork");
  // EINTR: a blocking read interrupted by a handler without SA_RESTART
  int p[2];
  if (pipe(p) != 0) return fail_check("pipe");
  alarm_in(50, 0);
  char c[8];
  ssize_t r = read(p[0], c, sizeof c);
  if (r != -1 || errno != EINTR) return fail_check("EINTR");
  puts("ok eintr");
  // SA_RESTART: the read restarts and gets the bytes written 200 ms later
  struct later l = {p[1], 200};
  pthread_t w;
  pthread_create(&w, NULL, write_later, &l);
  alarm_in(50, 1);
  r = read(p[0], c, sizeof c);
  pthread_join(w, NULL);
  if (r != 5 || memcmp(c, "12345", 5) != 0) return fail_check("SA_RESTART");
  puts("ok restart");
  // cancellation: read() is a cancellation point
  pthread_t t;
  pthread_create(&t, NULL, read_forever, &p[0]);
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL);
  pthread_cancel(t);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 5;
  void* ret = NULL;
  if (pthread_timedjoin_np(t, &ret, &until) != 0 || ret != PTHREAD_CANCELED) return fail_check("cancel");
  puts("ok cancel");
  // errno of failing calls
  errno = 0;
  if (write(-1, "x", 1) != -1 || errno != EBADF) return fail_check("write EBADF");
  if (read(12345, c, 1) != -1 || errno != EBADF) return fail_check("read EBADF");
  if (open("/nonexistent/strict", O_RDONLY) != -1 || errno != ENOENT) return fail_check("open ENOENT");
  errno = 42;
  if (write(g_null, "x", 1) != 1 || errno != 42) return fail_check("errno kept");
  puts("ok errno");
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && (!strcmp(argv[1], "raw") || !strcmp(argv[1], "libc") || !strcmp(argv[1], "stdio") ||
                    !strcmp(argv[1], "int80")))
    return transfer(argv[1], argv[2], atoll(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "calls")) {
    long n = atol(argv[2]);
    int fd = open("/dev/null", O_WRONLY);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; ++i)
      if (write(fd, "x", 1) != 1) die("write");
    printf("calls=%ld ns_per_call=%.1f\n", n, secs_since(&t0) * 1e9 / (double)n);
    return 0;
  }
  if (argc == 2 && !strcmp(argv[1], "checks")) return checks();
  if (argc == 4 && !strcmp(argv[1], "sendfile64")) return sendfile64_i386(argv[2], atoll(argv[3]));
  if (argc == 3 && !strcmp(argv[1], "recvmmsg64")) return recvmmsg64_i386(atoll(argv[2]));
  fprintf(stderr, "usage: strict_probe raw|libc|stdio|int80 PATH BYTES | sendfile64 PATH BYTES | recvmmsg64 BYTES | "
          "calls N | checks\n");
  return 2;
}
