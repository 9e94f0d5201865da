// SPDX-License-Identifier: MIT
// The options table read from the environment (set-up only): every value at once, and
// the Duration rows into Options.
#include "runtime/options.h"

#include <atomic>
#include <iterator>

#include "abi/limit_parse.h"
#include "bucket/limits_view.h"
#include "log/blog.h"
#include "sys/startup.h"

namespace bonsai {

// The supervisor leaves sleepers the same room by default (bucket/limits_view.h).
static_assert(option_default_u64(Opt::debt_ns) == kDefaultSlackNs, "BONSAI_DEBT_NS's default is kDefaultSlackNs");

namespace {

constexpr size_t kOptCount = std::size(kOptions);
constexpr size_t kPrefix = 7;  // "BONSAI_"

// What follows "BONSAI_" in each name, one after the other with a NUL after each, in
// writable start-up data: comparing against it faults in no .rodata page (where the
// table's string literals are), and it adds ~220 bytes to .data, whose one page every
// start writes anyway (sys/startup.h).
consteval size_t suffixes_size() {
  size_t n = 0;
  for (const OptionRow& row : kOptions)
    for (const char* p = row.name + kPrefix;; ++p) {
      ++n;
      if (!*p) break;
    }
  return n;
}
struct Suffixes {
  char s[suffixes_size()];
};
consteval Suffixes suffixes_make() {
  Suffixes r{};
  size_t n = 0;
  for (const OptionRow& row : kOptions)
    for (const char* p = row.name + kPrefix;; ++p) {
      r.s[n++] = *p;
      if (!*p) break;
    }
  return r;
}

BONSAI_STARTUP_DATA constinit Suffixes g_suffixes = suffixes_make();
BONSAI_STARTUP_DATA constinit const char* g_values[kOptCount] = {};
enum : int { kNotRead, kReading, kRead };
BONSAI_STARTUP_DATA constinit std::atomic<int> g_read{kNotRead};

// The first entry of a name counts, as for getenv.
BONSAI_STARTUP void note_entry(const char* e, void*) {
  Opt o;
  const char* value;
  if (option_entry(e, o, value) && !g_values[static_cast<size_t>(o)]) g_values[static_cast<size_t>(o)] = value;
}

BONSAI_STARTUP void duration_load(Opt o, uint64_t& ns) noexcept {
  const char* v = option_env(o);
  if (v && !duration_parse(v, ns))
    blog(LogLevel::Warn, "%s='%s' is not a duration (like 1000000, 500us, 2ms); using %llu ns", option_row(o).name,
         v, static_cast<unsigned long long>(option_default_u64(o)));
}

}  // namespace

BONSAI_STARTUP bool option_entry(const char* e, Opt& o, const char*& value) noexcept {
  if (!env_is_bonsai(e)) return false;
  const char* rest = e + kPrefix;
  const char* want = g_suffixes.s;
  for (size_t i = 0; i < kOptCount; ++i) {
    size_t j = 0;
    while (want[j] && rest[j] == want[j]) ++j;
    if (!want[j] && rest[j] == '=') {
      o = static_cast<Opt>(i);
      value = rest + j + 1;
      return true;
    }
    while (want[j]) ++j;
    want += j + 1;
  }
  return false;
}

BONSAI_STARTUP const char* option_env(Opt o) noexcept {
  if (g_read.load(std::memory_order_acquire) != kRead) {
    int expected = kNotRead;
    if (!g_read.compare_exchange_strong(expected, kReading, std::memory_order_acq_rel))
      return env_get_bonsai(option_row(o).name);  // another thread is reading: ask directly
    env_each(note_entry, nullptr);
    g_read.store(kRead, std::memory_order_release);
  }
  return g_values[static_cast<size_t>(o)];
}

BONSAI_STARTUP void options_load(Options& opts) noexcept {
  duration_load(Opt::spin_ns, opts.spin_ns);
  duration_load(Opt::debt_ns, opts.debt_ns);
}

}  // namespace bonsai
