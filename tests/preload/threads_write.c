/* SPDX-License-Identifier: MIT
   threads_write N TOTAL [PATH]: N threads each write() TOTAL/N bytes (16 KiB calls) to
   PATH (default /dev/null); reports the total and the seconds until all are done. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "preload_util.h"

static int g_fd;
static long long g_each;

static void* writer(void* arg) {
  (void)arg;
  static __thread char buf[16384];
  memset(buf, 'x', sizeof buf);
  for (long long done = 0; done < g_each;) {
    size_t n = g_each - done < (long long)sizeof buf ? (size_t)(g_each - done) : sizeof buf;
    ssize_t w = write(g_fd, buf, n);
    if (w <= 0) die("write");
    done += w;
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s N TOTAL [PATH]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  if (n < 1 || n > 64) n = 4;
  g_each = size_arg(argv[2]) / n;
  g_fd = open(argc > 3 ? argv[3] : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (g_fd < 0) die("open");
  pthread_t th[64];
  double t0 = now_s();
  for (int i = 0; i < n; ++i)
    if (pthread_create(&th[i], NULL, writer, NULL)) die("pthread_create");
  for (int i = 0; i < n; ++i) pthread_join(th[i], NULL);
  report(g_each * n, now_s() - t0);
  return 0;
}
