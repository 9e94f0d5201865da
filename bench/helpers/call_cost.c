// SPDX-License-Identifier: MIT
// Per-call cost: times N calls of one kind through the ordinary libc symbol (so a
// preloaded library sees them) and prints the median ns per call over 9 batches.
// Kinds: write (1 byte to /dev/null), send (1 byte on loopback TCP, drained by a
// thread), pread (4 KiB from a page-cached file). Built without _FORTIFY_SOURCE.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 9

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void* drain(void* arg) {
  int fd = *(int*)arg;
  static char buf[1 << 18];
  while (recv(fd, buf, sizeof buf, 0) > 0) {
  }
  return NULL;
}

// A connected loopback TCP socket whose peer is drained by a thread.
static int tcp_pair(void) {
  static int peer;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr*)&a, &al))
    return -1;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof a)) return -1;
  peer = accept(ls, NULL, NULL);
  if (peer < 0) return -1;
  pthread_t t;
  pthread_create(&t, NULL, drain, &peer);
  pthread_detach(t);
  return s;
}

static int cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: call_cost write|send|pread CALLS [FILE for pread]\n");
    return 2;
  }
  const char* kind = argv[1];
  long n = atol(argv[2]) / BATCHES;
  int fd = -1;
  char buf[4096];
  memset(buf, 'c', sizeof buf);
  if (!strcmp(kind, "write")) fd = open("/dev/null", O_WRONLY);
  else if (!strcmp(kind, "send")) fd = tcp_pair();
  else if (!strcmp(kind, "pread") && argc > 3) fd = open(argv[3], O_RDONLY);
  if (fd < 0 || n < 1) {
    fprintf(stderr, "call_cost: cannot set up '%s'\n", kind);
    return 1;
  }
  int k = kind[0] == 'w' ? 0 : kind[0] == 's' ? 1 : 2;
  uint64_t per[BATCHES];
  long warm = n / 4 + 1000;
  for (int b = -1; b < BATCHES; ++b) {
    long count = b < 0 ? warm : n;
    uint64_t t = now_ns();
    for (long i = 0; i < count; ++i) {
      ssize_t r = k == 0 ? write(fd, buf, 1)
                  : k == 1 ? send(fd, buf, 1, 0)
                           : pread(fd, buf, 4096, (off_t)(i & 255) * 4096);
      if (r < 0) {
        perror("call_cost");
        return 1;
      }
    }
    if (b >= 0) per[b] = (now_ns() - t) * 1000 / (uint64_t)count;  // ps per call
  }
  qsort(per, BATCHES, sizeof per[0], cmp_u64);
  printf("%.2f\n", (double)per[BATCHES / 2] / 1000.0);
  return 0;
}
