// SPDX-License-Identifier: MIT
// build-flags: -Wl,--no-as-needed -luring
// uring_read FILE [CMD ARGS...]: reads FILE in 64 KiB pieces through io_uring if
// io_uring_queue_init works, else with read() (as a liburing user falls back), and
// prints "path=uring|read bytes=N secs=S init=ERRNO-NAME filters=N nnp=N" (filters,
// nnp: this process's seccomp filter count and no_new_privs, /proc/self/status).
// Then execs CMD, if given (the io_uring guard must hold across exec).
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long status_field(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') v = strtol(line + n + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

int main(int argc, char** argv) {
  if (argc < 2) return fprintf(stderr, "usage: uring_read FILE [CMD ARGS...]\n"), 2;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return perror(argv[1]), 1;
  static char buf[65536];
  long long total = 0;
  double t0 = now();
  struct io_uring ring;
  int rc = io_uring_queue_init(8, &ring, 0);
  const char* path = rc == 0 ? "uring" : "read";
  if (rc == 0) {
    for (int i = 0; i < 100000; ++i) {
      struct io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (!sqe) return fprintf(stderr, "no sqe\n"), 1;
      io_uring_prep_read(sqe, fd, buf, sizeof buf, (unsigned long long)total);
      if (io_uring_submit(&ring) != 1) return fprintf(stderr, "submit failed\n"), 1;
      struct io_uring_cqe* cqe;
      if (io_uring_wait_cqe(&ring, &cqe) != 0) return fprintf(stderr, "wait failed\n"), 1;
      int res = cqe->res;
      io_uring_cqe_seen(&ring, cqe);
      if (res < 0) return fprintf(stderr, "uring read: %s\n", strerror(-res)), 1;
      if (res == 0) break;
      total += res;
    }
    io_uring_queue_exit(&ring);
  } else {
    for (int i = 0; i < 100000; ++i) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0) return perror("read"), 1;
      if (n == 0) break;
      total += n;
    }
  }
  close(fd);
  printf("path=%s bytes=%lld secs=%.3f init=%s filters=%ld nnp=%ld\n", path, total, now() - t0,
         rc == 0 ? "ok" : rc == -ENOSYS ? "ENOSYS" : strerror(-rc), status_field("Seccomp_filters"),
         status_field("NoNewPrivs"));
  fflush(stdout);
  if (argc > 2) {
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    return 1;
  }
  return 0;
}
