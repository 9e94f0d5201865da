// SPDX-License-Identifier: MIT
// The time-namespace offset of this process's CLOCK_MONOTONIC (see shm_clock.h).
#include "shm/shm_clock.h"

#include <fcntl.h>

#include "sys/raw_open.h"
#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

const char* skip_blanks(const char* p) {
  while (*p == ' ' || *p == '\t') ++p;
  return p;
}

// A decimal with optional '-', at most 19 digits. @return false if none.
bool parse_int(const char*& p, int64_t& out) {
  bool neg = *p == '-';
  if (neg) ++p;
  int64_t v = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; ++p) {
    if (++digits > 18) return false;
    v = v * 10 + (*p - '0');
  }
  if (!digits) return false;
  out = neg ? -v : v;
  return true;
}

}  // namespace

int64_t timens_mono_offset_parse(const char* text) noexcept {
  // Lines "<clock> <secs> <nanosecs>"; clock is "monotonic" (or its id, 1).
  const char* p = text;
  while (p && *p) {
    p = skip_blanks(p);
    bool mono = false;
    static constexpr char kName[] = "monotonic";
    size_t i = 0;
    while (kName[i] && p[i] == kName[i]) ++i;
    if (!kName[i] && (p[i] == ' ' || p[i] == '\t')) mono = true, p += i;
    else if (p[0] == '1' && (p[1] == ' ' || p[1] == '\t')) mono = true, p += 1;
    if (mono) {
      int64_t sec = 0, nsec = 0;
      p = skip_blanks(p);
      if (!parse_int(p, sec)) return 0;
      p = skip_blanks(p);
      if (!parse_int(p, nsec) || nsec < 0 || nsec >= 1'000'000'000) return 0;
      // |sec| < 10^18 but the kernel allows offsets of at most ~2^62 ns in total.
      constexpr int64_t kMaxSec = 4'000'000'000;  // ~126 years
      if (sec > kMaxSec || sec < -kMaxSec) return 0;
      return sec * 1'000'000'000 + nsec;
    }
    while (*p && *p != '\n') ++p;
    if (*p == '\n') ++p;
  }
  return 0;
}

int64_t timens_mono_offset_read() noexcept {
  char buf[256];
  long fd = raw_open("/proc/self/timens_offsets", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  long n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(sizeof buf - 1));
  raw_close(static_cast<int>(fd));
  if (n <= 0) return 0;
  buf[n] = '\0';
  return timens_mono_offset_parse(buf);
}

}  // namespace bonsai
