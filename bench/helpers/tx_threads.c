// SPDX-License-Identifier: MIT
// The sender of the accuracy benchmarks: N threads of one process write fixed-size
// calls to stdout (a pipe), or send() them on one loopback TCP connection, until the
// receiver goes away (EPIPE) or -t seconds pass. Run under the library (or trickle).
// -a START (unix seconds, CLOCK_REALTIME): every thread waits for that instant before its
// first call, so many processes started one after another begin together (bench/scenarios/burst.sh).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int g_fd = 1;
static size_t g_size = 4096;
static int g_use_send = 0;
static double g_secs = 3600;
static double g_start = 0;  // -a: unix time of the first call (0: at once)
enum { kMaxThreads = 256 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void* writer(void* arg) {
  (void)arg;
  char* buf = malloc(g_size);
  if (!buf) return NULL;
  memset(buf, 'b', g_size);
  if (g_start > 0) {  // absolute deadline: a late wake-up does not shift the others
    struct timespec at = {.tv_sec = (time_t)g_start, .tv_nsec = (long)((g_start - (double)(time_t)g_start) * 1e9)};
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, NULL) == EINTR) {}
  }
  double end = now_s() + g_secs;
  for (unsigned long i = 0;; ++i) {
    ssize_t r = g_use_send ? send(g_fd, buf, g_size, MSG_NOSIGNAL) : write(g_fd, buf, g_size);
    if (r < 0 && errno != EINTR) break;  // EPIPE: the receiver is done
    if ((i & 63) == 63 && now_s() > end) break;
  }
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  int threads = 1, port = 0, opt;
  while ((opt = getopt(argc, argv, "n:b:p:t:a:")) != -1) {
    switch (opt) {
      case 'n': threads = atoi(optarg); break;
      case 'b': g_size = (size_t)atol(optarg); break;
      case 'p': port = atoi(optarg); break;
      case 't': g_secs = atof(optarg); break;
      case 'a': g_start = atof(optarg); break;
      default:
        fprintf(stderr, "usage: tx_threads [-n THREADS] [-b CALL_BYTES] [-p PORT] [-t SECS] [-a START_UNIX_S]\n"
                        "  writes to stdout, or with -p send()s to 127.0.0.1:PORT\n");
        return 2;
    }
  }
  if (threads < 1 || threads > kMaxThreads || g_size == 0) return 2;
  signal(SIGPIPE, SIG_IGN);
  if (port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    g_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (g_fd < 0 || connect(g_fd, (struct sockaddr*)&a, sizeof a)) {
      perror("tx_threads: connect");
      return 1;
    }
    g_use_send = 1;
  }
  pthread_t t[kMaxThreads];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, writer, NULL);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  return 0;
}
