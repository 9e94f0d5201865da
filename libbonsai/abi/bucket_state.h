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
  std::atomic<uint64_t> late_ns;  // running sum of the cost (ns) of units charged after
                                  // they moved (a read's overdraft): takers already queued
                                  // behind tat shift by what it grew while they slept
  std::atomic<uint64_t> light_tat_ns;  // the clock of the writes let ahead of the queue
                                       // (bucket_take_light): bounds their burst
  std::atomic<uint64_t> ceil_tat_ns;  // shares: the clock of the rule's ceiling (bucket/share.h),
                                      // at the ceil rate; unused without a ceiling
  char pad_[32];
};
static_assert(sizeof(BucketState) == 64);

}  // namespace bonsai
