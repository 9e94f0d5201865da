// SPDX-License-Identifier: MIT
// The process's limiter: which bucket a call is charged to, waiting when the bucket
// is in debt, and accounting. Runs inside the host process: the inline parts are the
// fast path (no clock, no syscall, no lock, no allocation); the rest is noinline.
#pragma once
#include <atomic>
#include <cstdint>
#include <sys/types.h>

#include "abi/limits_abi.h"
#include "bucket/token_bucket.h"
#include "runtime/counters.h"
#include "runtime/options.h"

namespace bonsai {

// An immutable snapshot of the limits in force.
struct LimitsView {
  LimitSet set;
  BucketTable table;
  BucketParams params[kMaxRules];
};

struct Limiter {
  std::atomic<int> state;                 // LimiterState
  std::atomic<const LimitsView*> view;    // limits in force, or nullptr
  BucketState* buckets;                   // kMaxRules states (process memory or shm)
  ProcessCounters* counters;              // this process's counters
  Options opts;
};

enum LimiterState : int { kUninit = 0, kIniting = 1, kActive = 2, kPassthrough = 3 };

extern constinit Limiter g_limiter;

// Runs the one-time setup (environment, real symbols) if not done yet. Safe to call
// from any wrapper, including before our constructor ran. @return true if active.
bool limiter_init_once() noexcept;

inline bool limiter_active() noexcept {
  int s = g_limiter.state.load(std::memory_order_acquire);
  if (s == kActive) [[likely]] return true;
  if (s == kUninit) return limiter_init_once();
  return false;
}

// The fd kind used for the bucket lookup (one fstat). Only needed when the
// limits are fd-sensitive.
FdKind fd_kind_of(int fd) noexcept;

// What a wrapper holds between its wait and its charge.
struct Ticket {
  const LimitsView* view;  // nullptr: the call is only accounted
  uint8_t bucket;          // kNoBucket: no limit on this call
  CallId call;
  uint64_t waited_ns;      // 0 if the call did not wait
};

// Finds the call's bucket (fd < 0: no descriptor). Fast: two loads and a table lookup.
inline Ticket ticket_for(CallId call, int fd) noexcept {
  const LimitsView* v = g_limiter.view.load(std::memory_order_acquire);
  Ticket t{v, kNoBucket, call, 0};
  if (!v) return t;
  auto c = static_cast<size_t>(call);
  if (!v->table.fd_sensitive) [[likely]] {
    t.bucket = v->table.bucket_of[c][0];
  } else {
    FdKind k = fd < 0 ? FdKind::None : fd_kind_of(fd);
    t.bucket = v->table.bucket_of[c][static_cast<size_t>(k)];
  }
  return t;
}

// Slow path of ticket_wait: refill, and sleep if the bucket is in debt.
void ticket_wait_slow(Ticket& t, bool cancellable) noexcept __attribute__((noinline));

// Waits, before the real call, until the call's bucket allows it.
inline void ticket_wait(Ticket& t, bool cancellable) noexcept {
  if (t.bucket == kNoBucket) [[likely]] return;
  if (bucket_has_credit(g_limiter.buckets[t.bucket])) [[likely]] return;
  ticket_wait_slow(t, cancellable);
}

// Largest transfer worth making in one real call on this ticket's bucket
// (SIZE_MAX if unlimited or a call-rate bucket).
inline size_t ticket_chunk(const Ticket& t) noexcept {
  if (t.bucket == kNoBucket) return SIZE_MAX;
  if (t.view->set.rules[t.bucket].unit != RateUnit::Bytes) return SIZE_MAX;
  return static_cast<size_t>(t.view->params[t.bucket].chunk);
}

// Charges what one real call moved to the ticket's bucket (a call-rate bucket is
// charged one call whatever moved). errno is not touched.
inline void ticket_charge(const Ticket& t, ssize_t moved) noexcept {
  if (t.bucket == kNoBucket) return;
  bool calls = t.view->set.rules[t.bucket].unit == RateUnit::Calls;
  bucket_charge(g_limiter.buckets[t.bucket], calls ? 1 : moved);
}

// Counts one application call that moved `moved` bytes (< 0: it failed).
inline void ticket_count(const Ticket& t, ssize_t moved) noexcept {
  CallCounters& c = g_limiter.counters->by_call[static_cast<size_t>(t.call)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  if (moved > 0) c.bytes.fetch_add(static_cast<uint64_t>(moved), std::memory_order_relaxed);
  if (t.waited_ns) [[unlikely]] {
    c.throttled.fetch_add(1, std::memory_order_relaxed);
    c.wait_ns.fetch_add(t.waited_ns, std::memory_order_relaxed);
  }
}

// After the real call: charge and count (return-path accounting).
inline void ticket_done(const Ticket& t, ssize_t moved) noexcept {
  ticket_charge(t, moved);
  ticket_count(t, moved);
}

// Installs `set` as the limits in force (constructor or control plane). The
// previous view stays readable (views are never freed). @return false if invalid.
bool limiter_install(const LimitSet& set) noexcept;

// Writes the BONSAI_STATS JSON line for this process (at exit).
void stats_dump_at_exit() noexcept;

}  // namespace bonsai
