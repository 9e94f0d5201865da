// SPDX-License-Identifier: MIT
// Loading the options table from the environment (constructor only).
#include "runtime/options.h"

#include <cstdlib>
#include <cstring>

#include "log/blog.h"
#include "sys/env.h"

namespace bonsai {
namespace {

bool duration_parse(const char* s, uint64_t& ns) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s) return false;
  uint64_t mult = 1;
  if (*end == '\0' || std::strcmp(end, "ns") == 0) mult = 1;
  else if (std::strcmp(end, "us") == 0) mult = 1000;
  else if (std::strcmp(end, "ms") == 0) mult = 1000000;
  else if (std::strcmp(end, "s") == 0) mult = 1000000000;
  else return false;
  if (v > 60ull * 1000000000ull / mult) return false;  // more than a minute: a typo
  ns = v * mult;
  return true;
}

}  // namespace

void options_load(Options& opts) noexcept {
#define BONSAI_X(name, def, env, doc)                                          \
  if (const char* v = env_get(env)) {                                      \
    if (!duration_parse(v, opts.name))                                         \
      blog(LogLevel::Warn, "%s='%s' is not a duration (like 1000000, 500us, 2ms); using %llu ns", \
           env, v, static_cast<unsigned long long>(def));                      \
  }
  BONSAI_OPTIONS(BONSAI_X)
#undef BONSAI_X
}

}  // namespace bonsai
