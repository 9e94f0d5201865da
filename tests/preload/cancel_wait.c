/* SPDX-License-Identifier: MIT
   cancel_wait: two threads wait in throttled wrappers (one 8 MiB write() cut into chunks,
   one loop of 4 KiB write()s); main cancels both after 300 ms and reports how long the
   joins took. Both must end with PTHREAD_CANCELED. With an argument SECS it then stays
   alive that long without I/O (t_host_cancel_slot: a cancelled wait must not be left counted). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload_util.h"

static int g_null;

static void* big_write(void* arg) {
  (void)arg;
  static char buf[8 << 20];
  if (write(g_null, buf, sizeof buf) < 0) die("big write");
  return NULL; /* reaching here means the cancel did not act */
}

static void* small_writes(void* arg) {
  (void)arg;
  static char buf[4096];
  for (;;)
    if (write(g_null, buf, sizeof buf) < 0) die("small write");
  return NULL;
}

int main(int argc, char** argv) {
  g_null = open("/dev/null", O_WRONLY);
  if (g_null < 0) die("open");
  pthread_t a, b;
  if (pthread_create(&a, NULL, big_write, NULL) || pthread_create(&b, NULL, small_writes, NULL))
    die("pthread_create");
  usleep(300000);
  double t0 = now_s();
  pthread_cancel(a);
  pthread_cancel(b);
  void *ra = NULL, *rb = NULL;
  pthread_join(a, &ra);
  pthread_join(b, &rb);
  double secs = now_s() - t0;
  if (ra != PTHREAD_CANCELED || rb != PTHREAD_CANCELED) die("a thread was not cancelled");
  printf("join_secs=%.4f\n", secs);
  fflush(stdout);
  if (argc > 1) sleep((unsigned)atoi(argv[1]));
  return 0;
}
