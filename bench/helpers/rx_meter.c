// SPDX-License-Identifier: MIT
// The receiving end of the accuracy benchmarks: reads a byte stream from stdin (a pipe)
// or from one loopback TCP connection, timestamps every read, and prints the long-run
// rate and the coefficient of variation of the rate over 10 ms, 100 ms and 1 s windows.
// Runs without the library; stops after -t seconds (the sender then sees EPIPE).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BIN_NS 1000000ull  // 1 ms bins; windows are whole numbers of bins

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(void) {
  fprintf(stderr,
          "usage: rx_meter -t SECS [-s SKIP_SECS] [-l PORTFILE] [-T SERIES.csv] [-w SERIES_MS] [-r CAP_BPS]\n"
          "  reads stdin, or with -l listens on 127.0.0.1 (ephemeral port written to PORTFILE)\n"
          "  prints: bytes= secs= rate= mean_rate= total_rate= cv10= cv100= cv1000= (rates in B/s)\n"
          "  with -r: also peak_excess=, the most bytes any interval of whole 1 ms bins held beyond\n"
          "  CAP_BPS x its length (a token bucket's burst: bounded by its depth)\n");
  exit(2);
}

// Listens on 127.0.0.1:0, publishes the port, accepts one connection.
static int accept_one(const char* portfile) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr*)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr*)&a, &al)) {
    perror("rx_meter: listen");
    exit(1);
  }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
  FILE* f = fopen(tmp, "w");
  if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) || rename(tmp, portfile)) {
    perror("rx_meter: portfile");
    exit(1);
  }
  int s = accept(ls, NULL, NULL);
  if (s < 0) {
    perror("rx_meter: accept");
    exit(1);
  }
  close(ls);
  return s;
}

// CV of the byte counts of consecutive windows of `w` bins in bins [from, to).
static double window_cv(const uint64_t* bins, size_t from, size_t to, size_t w) {
  size_t n = (to - from) / w;
  if (n < 2) return NAN;
  double sum = 0, sq = 0;
  for (size_t i = 0; i < n; ++i) {
    double x = 0;
    for (size_t j = 0; j < w; ++j) x += (double)bins[from + i * w + j];
    sum += x;
    sq += x * x;
  }
  double mean = sum / (double)n;
  double var = sq / (double)n - mean * mean;
  return mean > 0 ? sqrt(var > 0 ? var : 0) / mean : NAN;
}

// The most any run of consecutive bins (a, b] held beyond cap x its length, in bytes:
// max over b of E(b) - min over a < b of E(a), E(b) = bytes in bins [0, b] - cap x (b + 1) ms.
static double peak_excess(const uint64_t* bins, size_t nbins, double cap_bps) {
  double e = 0, lowest = 0, peak = 0, per_bin = cap_bps * (double)BIN_NS / 1e9;
  for (size_t b = 0; b < nbins; ++b) {
    e += (double)bins[b] - per_bin;
    if (e - lowest > peak) peak = e - lowest;
    if (e < lowest) lowest = e;
  }
  return peak;
}

int main(int argc, char** argv) {
  double secs = 0, skip = -1, cap = 0;
  const char *portfile = NULL, *series = NULL;
  int series_ms = 10, opt;
  while ((opt = getopt(argc, argv, "t:s:l:T:w:r:")) != -1) {
    switch (opt) {
      case 't': secs = atof(optarg); break;
      case 's': skip = atof(optarg); break;
      case 'l': portfile = optarg; break;
      case 'T': series = optarg; break;
      case 'w': series_ms = atoi(optarg); break;
      case 'r': cap = atof(optarg); break;
      default: usage();
    }
  }
  if (secs <= 0 || series_ms <= 0) usage();
  if (skip < 0) skip = secs / 8 < 0.5 ? secs / 8 : 0.5;
  int fd = portfile ? accept_one(portfile) : 0;

  size_t nbins = (size_t)(secs * 1e9 / BIN_NS) + 2;
  uint64_t* bins = calloc(nbins, sizeof *bins);
  size_t bufsz = 1 << 20;
  char* buf = malloc(bufsz);
  if (!bins || !buf) return 1;

  uint64_t t0 = 0, t_skip = 0, t_s = 0, t_e = 0, t_last = 0;
  uint64_t total = 0, steady = 0, end_ns = (uint64_t)(secs * 1e9);
  // Least-squares slope of cumulative bytes over time (Welford form): unbiased by
  // where in a periodic burst pattern the steady interval happens to start and end.
  double n = 0, mt = 0, mc = 0, stc = 0, stt = 0;
  for (;;) {
    ssize_t r = read(fd, buf, bufsz);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    uint64_t t = now_ns();
    if (!t0) {
      t0 = t;
      t_skip = t0 + (uint64_t)(skip * 1e9);
    }
    uint64_t rel = t - t0;
    if (rel >= end_ns) break;  // this read is past the window: not counted
    total += (uint64_t)r;
    t_last = t;
    bins[rel / BIN_NS] += (uint64_t)r;
    if (t >= t_skip) {
      if (!t_s) t_s = t;  // the first steady read only marks the start
      else steady += (uint64_t)r;
      t_e = t;
      double x = (double)(t - t_s) / 1e9, y = (double)steady, dx = x - mt;
      n += 1;
      mt += dx / n;
      mc += (y - mc) / n;
      stc += dx * (y - mc);
      stt += dx * (x - mt);
    }
  }
  if (!t0 || t_e <= t_s) {
    printf("bytes=%llu secs=0 rate=nan mean_rate=nan total_rate=nan cv10=nan cv100=nan cv1000=nan\n",
           (unsigned long long)total);
    return 1;
  }
  double rate = stt > 0 ? stc / stt : NAN;
  double mean_rate = (double)steady / ((double)(t_e - t_s) / 1e9);
  double total_rate = t_last > t0 ? (double)total / ((double)(t_last - t0) / 1e9) : NAN;
  size_t from = (size_t)((t_s - t0 + BIN_NS - 1) / BIN_NS), to = (size_t)((t_e - t0) / BIN_NS);
  printf("bytes=%llu secs=%.3f rate=%.1f mean_rate=%.1f total_rate=%.1f cv10=%.4f cv100=%.4f cv1000=%.4f",
         (unsigned long long)total, (double)(t_e - t_s) / 1e9, rate, mean_rate, total_rate, window_cv(bins, from, to, 10),
         window_cv(bins, from, to, 100), window_cv(bins, from, to, 1000));
  if (cap > 0) printf(" peak_excess=%.0f", peak_excess(bins, (size_t)((t_last - t0) / BIN_NS) + 1, cap));
  printf("\n");
  if (series) {
    FILE* f = fopen(series, "w");
    if (!f) return 1;
    fprintf(f, "t_s,mib_per_s\n");
    size_t last = (size_t)((t_last - t0) / BIN_NS);
    for (size_t i = 0; i + (size_t)series_ms <= last; i += (size_t)series_ms) {
      uint64_t b = 0;
      for (size_t j = 0; j < (size_t)series_ms; ++j) b += bins[i + j];
      fprintf(f, "%.3f,%.4f\n", (double)i / 1e3, (double)b / 1048576.0 / (series_ms / 1e3));
    }
    fclose(f);
  }
  return 0;
}
