// SPDX-License-Identifier: MIT
// A tenant of the shares bench (bench/scenarios/shares.sh): writes BS-byte blocks to /dev/null while
// busy, sleeps while idle, on a schedule relative to a common start (CLOCK_MONOTONIC ns,
// so that two tenants share one time line), and prints the bytes moved per 5 ms bin.
// usage: share_tenant T0_NS DURATION_MS BS BUSY_FROM_MS-BUSY_TO_MS[,FROM-TO]... [PORT]
// With PORT it sends to 127.0.0.1:PORT instead (the tc HTB comparison: no bonsai).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kBinNs = 5000000, kMaxBins = 12000, kMaxSpans = 16 };

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long bins[kMaxBins];

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: share_tenant T0_NS DURATION_MS BS FROM-TO[,FROM-TO]...\n");
    return 2;
  }
  long long t0 = atoll(argv[1]), dur = atoll(argv[2]) * 1000000LL;
  size_t bs = (size_t)atol(argv[3]);
  long long from[kMaxSpans], to[kMaxSpans];
  int spans = 0;
  for (char* s = strtok(argv[4], ","); s && spans < kMaxSpans; s = strtok(NULL, ",")) {
    char* dash = strchr(s, '-');
    if (!dash) return 2;
    from[spans] = atoll(s) * 1000000LL, to[spans] = atoll(dash + 1) * 1000000LL, ++spans;
  }
  if (dur / kBinNs >= kMaxBins || bs == 0 || bs > (1 << 24)) return 2;
  char* buf = calloc(1, bs);
  int fd;
  if (argc == 6) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[5]))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&sa, sizeof sa) != 0) return 1;
  } else {
    fd = open("/dev/null", O_WRONLY);
  }
  if (!buf || fd < 0) return 1;
  for (;;) {
    long long t = now_ns() - t0;
    if (t >= dur) break;
    int busy = 0;
    long long next = dur;
    for (int i = 0; i < spans; ++i) {
      if (t >= from[i] && t < to[i]) busy = 1;
      if (from[i] > t && from[i] < next) next = from[i];
    }
    if (!busy) {  // idle until the next busy span (or the end)
      long long left = next - t;
      struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
      nanosleep(&ts, NULL);
      continue;
    }
    ssize_t n = write(fd, buf, bs);
    if (n > 0) {
      long long b = (now_ns() - t0) / kBinNs;
      if (b >= 0 && b < kMaxBins) bins[b] += n;
    }
  }
  printf("t_ms,bytes\n");
  for (long long b = 0; b < dur / kBinNs; ++b) printf("%lld,%lld\n", b * 5, bins[b]);
  return 0;
}
