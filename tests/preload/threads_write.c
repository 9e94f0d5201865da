/* SPDX-License-Identifier: MIT
   threads_write N TOTAL [PATH [CHUNK]]: N threads each write() TOTAL/N bytes (CHUNK-byte
   calls, default 16 KiB, at most 1 MiB) to PATH (default /dev/null); reports the total
   and the seconds until all are done. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "preload_util.h"

static int g_fd;
static long long g_each;
static size_t g_chunk = 16384;

static void* writer(void* arg) {
  (void)arg;
  static __thread char buf[1 << 20];
  memset(buf, 'x', g_chunk);
  for (long long done = 0; done < g_each;) {
    size_t n = g_each - done < (long long)g_chunk ? (size_t)(g_each - done) : g_chunk;
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
  if (argc > 4) {
    long long c = size_arg(argv[4]);
    g_chunk = c < 1 ? 1 : c > (1 << 20) ? (1 << 20) : (size_t)c;
  }
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
