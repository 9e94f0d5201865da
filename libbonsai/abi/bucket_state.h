// SPDX-License-Identifier: MIT
// A token bucket's shared state as the segment publishes it (ShmSegment::buckets) and
// the process keeps it (its own buckets): the layout only; the arithmetic on it is
// bucket/token_bucket.h. Bump BONSAI_ABI_VERSION on any change.
#pragma once
#include <atomic>
#include <cstdint>

namespace bonsai {

// Shared state: one cache line so buckets never share one.
struct alignas(64) BucketState {
  std::atomic<uint64_t> tat_ns;  // theoretical arrival time (host CLOCK_MONOTONIC ns:
                                 // see shm/shm_clock.h for processes in a time namespace)
  char pad_[56];
};
static_assert(sizeof(BucketState) == 64);

}  // namespace bonsai
