// SPDX-License-Identifier: MIT
// The limiter's slow paths and set-up (see limiter.h). Runs inside the host process:
// no allocation, no locks, no exceptions; on anything unexpected it runs unlimited
// and says so once.
#include "runtime/limiter.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sys/stat.h>

#include "abi/limit_parse.h"
#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/clock.h"
#include "runtime/stats_dump.h"
#include "runtime/wait.h"

namespace bonsai {

constinit Limiter g_limiter{};

namespace {

constinit BucketState g_local_buckets[kMaxRules]{};
constinit ProcessCounters g_local_counters{};

// Views are never freed: a reader may still hold an old one. Installs are rare
// (start-up and operator changes), so a small ring is enough.
constexpr size_t kViewRing = 8;
constinit LimitsView g_views[kViewRing]{};
constinit std::atomic<size_t> g_next_view{0};

// Set while this thread waits: a signal handler's call made meanwhile goes ahead
// (it is still charged) instead of waiting inside the handler.
constinit thread_local bool t_in_wait = false;

void after_fork_in_child() { counters_reset(*g_limiter.counters); }

void limits_from_env() {
  const char* text = std::getenv("BONSAI_LIMITS");
  if (!text || !*text) return;
  static LimitSet set;  // zero-initialised; the constructor runs once
  ParseError err;
  if (!limit_parse(text, set, err)) {
    blog(LogLevel::Error, "BONSAI_LIMITS: %s at offset %zu in '%s'; running unlimited",
         err.message, err.offset, text);
    return;
  }
  limiter_install(set);
}

}  // namespace

bool limiter_install(const LimitSet& set) noexcept {
  size_t slot = g_next_view.fetch_add(1, std::memory_order_relaxed) % kViewRing;
  LimitsView& v = g_views[slot];
  v.set = set;
  if (!bucket_table_build(v.set, v.table, nullptr)) return false;
  for (uint32_t r = 0; r < v.set.count; ++r) v.params[r] = bucket_params(v.set.rules[r]);
  g_limiter.view.store(&v, std::memory_order_release);
  return true;
}

bool limiter_init_once() noexcept {
  int expected = kUninit;
  if (!g_limiter.state.compare_exchange_strong(expected, kIniting, std::memory_order_acq_rel))
    return expected == kActive;  // another thread (or this one, re-entered) is setting up
  int saved_errno = errno;
  blog_set_level(std::getenv("BONSAI_LOG"));
  g_limiter.buckets = g_local_buckets;
  g_limiter.counters = &g_local_counters;
  options_load(g_limiter.opts);
  limits_from_env();
  stats_path_from_env();
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  errno = saved_errno;
  g_limiter.state.store(kActive, std::memory_order_release);
  return true;
}

FdKind fd_kind_of(int fd) noexcept {
  int saved = errno;
  struct stat st;
  FdKind k = FdKind::File;
  if (fstat(fd, &st) == 0) {
    if (S_ISSOCK(st.st_mode)) k = FdKind::Socket;
    else if (S_ISFIFO(st.st_mode)) k = FdKind::Pipe;
  }
  errno = saved;
  return k;
}

void ticket_wait_slow(Ticket& t, bool cancellable) noexcept {
  BucketState& b = g_limiter.buckets[t.bucket];
  const BucketParams& p = t.view->params[t.bucket];
  uint64_t now = mono_ns();
  Refill r = bucket_refill(b, p, now, g_limiter.opts.debt_ns);
  if (r.deadline_ns == 0) return;
  if (t_in_wait) {  // re-entered from a signal handler: never wait in there
    bucket_publish(b, r.grant);
    return;
  }
  t_in_wait = true;
  wait_until(r.deadline_ns, g_limiter.opts.spin_ns, cancellable);
  t_in_wait = false;
  bucket_publish(b, r.grant);
  uint64_t end = mono_ns();
  t.waited_ns += end > now ? end - now : 1;
}

}  // namespace bonsai
