// SPDX-License-Identifier: MIT
// The distribution of time calls spent held back, per call name: a histogram with
// log-spaced buckets (upper bounds 10 us x 4^k, k = 0..10, then +Inf), kept as plain
// counters in the service's segment (ShmSegment::wait_hist) so that every process of
// the service (and its supervisor) adds to one histogram without allocating. Only
// held calls touch it: the fast path never does. Layout is ABI (bump
// BONSAI_ABI_VERSION on any change).
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/calls.h"

namespace bonsai {

inline constexpr unsigned kWaitBuckets = 12;
inline constexpr uint64_t kWaitBucketBaseNs = 10'000;  // the first upper bound: 10 us

// The bucket of a wait of `ns` (the smallest k with ns <= 10 us x 4^k, or the last).
inline unsigned wait_bucket(uint64_t ns) noexcept {
  if (ns <= kWaitBucketBaseNs) return 0;
  uint64_t q = (ns - 1) / kWaitBucketBaseNs;  // >= 1
  unsigned k = static_cast<unsigned>(63 - __builtin_clzll(q)) / 2 + 1;
  return k < kWaitBuckets - 1 ? k : kWaitBuckets - 1;
}

// Upper bound of bucket k in ns (UINT64_MAX for the last: +Inf).
inline constexpr uint64_t wait_bucket_le_ns(unsigned k) noexcept {
  return k + 1 >= kWaitBuckets ? UINT64_MAX : kWaitBucketBaseNs << (2 * k);
}

struct alignas(64) WaitHist {
  std::atomic<uint64_t> count[kCallCount][kWaitBuckets];
};

inline void wait_hist_add(WaitHist* h, CallId call, uint64_t ns) noexcept {
  if (!h || call == CallId::count_) return;
  h->count[static_cast<unsigned>(call)][wait_bucket(ns)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace bonsai
