// SPDX-License-Identifier: MIT
// Loopback TCP streams for the socket variant of the co-tenant experiment (bench/scenarios/cotenant.sh).
//   cotenant_stream serve PORTFILE LIFETIME_S   - 127.0.0.1 server: one forked sender per client,
//                                                 send()s 64 KiB blocks; exits after LIFETIME_S
//   cotenant_stream recv PORT SECONDS LOGFILE [BIN_MS]
//                                               - recv()s for SECONDS (or until SIGTERM), logs the rate per BIN_MS
//                                                 (default 1000) in fio's bw-log format
//                                                 (unix ms at the end of the bin, KiB/s, 0, 0, 0)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBlock = 64 * 1024, kMaxSeconds = 600, kMaxBins = 600 * 100 };

static double now_s(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char* what) {
  fprintf(stderr, "cotenant_stream: %s: %s\n", what, strerror(errno));
  return 1;
}

// ---- server ----

static void send_forever(int fd) {
  static char block[kBlock];
  memset(block, 'b', sizeof block);
  for (;;) {
    ssize_t n = send(fd, block, sizeof block, MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR) break;  // client gone (EPIPE/ECONNRESET)
  }
  close(fd);
}

static void reap(int sig) {
  (void)sig;
  int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {}
  errno = saved;
}

static int serve(const char* portfile, int lifetime) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  if (ls < 0) return die("socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (bind(ls, (struct sockaddr*)&a, sizeof a) < 0 || listen(ls, 16) < 0) return die("bind/listen");
  if (getsockname(ls, (struct sockaddr*)&a, &alen) < 0) return die("getsockname");
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
  FILE* f = fopen(tmp, "w");
  if (!f) return die(tmp);
  fprintf(f, "%d\n", ntohs(a.sin_port));
  if (fclose(f) != 0 || rename(tmp, portfile) != 0) return die(portfile);  // appears whole
  signal(SIGCHLD, reap);
  alarm((unsigned)lifetime);  // never outlive the experiment, whatever the caller does
  for (;;) {
    int c = accept(ls, NULL, NULL);
    if (c < 0) {
      if (errno == EINTR) continue;
      return die("accept");
    }
    pid_t p = fork();
    if (p == 0) {
      close(ls);
      send_forever(c);
      exit(0);  // exit(), not _exit(): BONSAI_STATS is written by the library at exit
    }
    close(c);
  }
}

// ---- receiver ----

static volatile sig_atomic_t g_stop;  // SIGTERM: stop early, still write the log
static void on_term(int sig) {
  (void)sig;
  g_stop = 1;
}

static int receive(int port, int seconds, const char* logfile, int bin_ms) {
  if (seconds < 1 || seconds > kMaxSeconds || bin_ms < 10 || bin_ms > 1000) {
    fprintf(stderr, "cotenant_stream: SECONDS must be 1..%d, BIN_MS 10..1000\n", kMaxSeconds);
    return 2;
  }
  int nbins = (int)((long)seconds * 1000 / bin_ms);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return die("socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(s, (struct sockaddr*)&a, sizeof a) < 0) return die("connect");
  struct sigaction sa = {.sa_handler = on_term};  // no SA_RESTART: recv() returns EINTR
  sigaction(SIGTERM, &sa, NULL);
  static char buf[kBlock];
  static unsigned long long bins[kMaxBins];
  double wall0 = now_s(CLOCK_REALTIME), t0 = now_s(CLOCK_MONOTONIC);
  for (;;) {
    double t = now_s(CLOCK_MONOTONIC) - t0;
    if (t >= seconds || g_stop) break;
    ssize_t n = recv(s, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return die("recv (server closed?)");
    int bin = (int)((now_s(CLOCK_MONOTONIC) - t0) * 1000.0 / bin_ms);
    if (bin < nbins) bins[bin] += (unsigned long long)n;
  }
  close(s);
  FILE* f = fopen(logfile, "w");
  if (!f) return die(logfile);
  for (int i = 0; i < nbins; ++i)
    fprintf(f, "%.0f, %llu, 0, 0, 0\n", wall0 * 1000.0 + (double)(i + 1) * bin_ms,
            bins[i] * 1000 / (unsigned long long)bin_ms / 1024);
  return fclose(f) == 0 ? 0 : die(logfile);
}

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "serve") == 0) return serve(argv[2], atoi(argv[3]));
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "recv") == 0)
    return receive(atoi(argv[2]), atoi(argv[3]), argv[4], argc == 6 ? atoi(argv[5]) : 1000);
  fprintf(stderr, "usage: cotenant_stream serve PORTFILE LIFETIME_S | recv PORT SECONDS LOGFILE [BIN_MS]\n");
  return 2;
}
