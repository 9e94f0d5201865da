// SPDX-License-Identifier: MIT
// The token bucket: pure arithmetic on state that may live in process memory or in a
// shared-memory segment. No syscalls (the caller passes the time), no allocation, no
// locks; every operation is a handful of atomics, safe in signal handlers.
//
// Form: a virtual-clock (GCRA) bucket, `tat_ns`, fronted by a prepaid pool of units.
// - The fast path only looks at the pool: while it is positive a call goes ahead
//   without reading the clock, and charges what it moved on the way back
//   (one relaxed fetch_sub). This keeps an unthrottled call near the raw cost.
// - When the pool is empty or in deficit, one caller moves the deficit plus a batch
//   into the virtual clock (tat += units/rate, never below now - depth) and waits
//   until tat - depth if that is more than `slack_ns` away; then the batch is
//   published to the pool. So debt accumulates up to `slack_ns` and is slept off in
//   one go: a throttled process sleeps in few long waits instead of spinning.
// - Every unit moved is charged exactly once to the clock: the long-run rate is
//   exact; bursts are bounded by depth + batch + slack.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/limits_abi.h"

namespace bonsai {

static_assert(std::atomic<int64_t>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Immutable per-rule numbers, derived from a Rule.
struct BucketParams {
  uint64_t ns_per_unit_q32;  // nanoseconds per unit, 32.32 fixed point
  uint64_t depth_ns;         // bucket depth expressed as time
  int64_t batch;             // units granted to the pool per refill
  int64_t chunk;             // largest transfer worth making in one real call
};

// Mutable state; one cache line so buckets never share one.
struct alignas(64) BucketState {
  std::atomic<int64_t> pool;    // prepaid units; negative = deficit to charge
  std::atomic<uint64_t> tat_ns;  // theoretical arrival time (CLOCK_MONOTONIC ns)
  char pad_[48];
};
static_assert(sizeof(BucketState) == 64);

inline constexpr uint64_t kDefaultDepthNs = 10'000'000;  // 10 ms of rate
inline constexpr uint64_t kBatchNs = 1'000'000;          // 1 ms of rate per refill

// Derives params from a rule; rate must be > 0.
BucketParams bucket_params(const Rule& rule) noexcept;

// Resets a bucket to full (pool empty, clock at zero so the next refill sees it idle).
inline void bucket_reset(BucketState& s) noexcept {
  s.pool.store(0, std::memory_order_relaxed);
  s.tat_ns.store(0, std::memory_order_relaxed);
}

// @return true if a call may go ahead without consulting the clock.
// Cost: one relaxed load.
inline bool bucket_has_credit(const BucketState& s) noexcept {
  return s.pool.load(std::memory_order_relaxed) > 0;
}

// Charges `units` actually moved (return-path accounting). Cost: one relaxed atomic.
inline void bucket_charge(BucketState& s, int64_t units) noexcept {
  if (units > 0) s.pool.fetch_sub(units, std::memory_order_relaxed);
}

struct Refill {
  uint64_t deadline_ns;  // 0: go now; else wait until this CLOCK_MONOTONIC time
  int64_t grant;         // units to publish (bucket_publish) once the wait is over
};

// Slow path, when bucket_has_credit() is false: moves the pool's deficit plus one
// batch onto the virtual clock. @return when the caller may go, and the grant it
// must publish then. If another thread refilled meanwhile, returns {0, 0}.
// Cost: 2-3 atomics.
Refill bucket_refill(BucketState& s, const BucketParams& p, uint64_t now_ns,
                     uint64_t slack_ns) noexcept;

// Publishes a grant to the pool after the wait.
inline void bucket_publish(BucketState& s, int64_t grant) noexcept {
  if (grant > 0) s.pool.fetch_add(grant, std::memory_order_relaxed);
}

// ns for `units` at the bucket's rate, saturating at 2^62.
uint64_t bucket_cost_ns(const BucketParams& p, uint64_t units) noexcept;

}  // namespace bonsai
