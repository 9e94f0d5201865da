/* SPDX-License-Identifier: MIT
   Helpers shared by the small C programs that the integration tests run under
   libbonsai: failing loudly, a monotonic clock, the one-line result the scripts parse. */
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline void die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (errno %d: %s)\n", errno, strerror(errno));
  va_end(ap);
  exit(1);
}

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The line the test scripts parse: bytes (or calls) moved and seconds taken. */
static inline void report(long long bytes, double secs) {
  printf("bytes=%lld secs=%.4f\n", bytes, secs);
  fflush(stdout);
}

/* Size argument with an optional K/M suffix (binary). */
static inline long long size_arg(const char* s) {
  char* end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  if (end && (*end == 'M' || *end == 'm')) v <<= 20;
  return v;
}
