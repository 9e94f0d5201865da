// SPDX-License-Identifier: MIT
// The durations of a protected service's calls (docs/reference/protect.md): the real
// call's own time, not bonsai's wait, counted by every process of the service into one
// histogram in its segment (ShmSegment::protect) and read as per-period deltas by the
// protect controller. Buckets are log-linear (4 per power of two, each at most 19%
// wide: wait_hist's x4 buckets are too coarse to tell 2.5 ms from 3 ms). Only processes
// of a service with `protect:` touch it, and only for the calls it names
// (ShmProtect::calls): other services' calls never do. Layout is ABI (bump
// BONSAI_ABI_VERSION on any change).
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/calls.h"

namespace bonsai {

inline constexpr unsigned kProtectBuckets = 128;
inline constexpr unsigned kProtectSubBits = 2;  // 4 buckets per power of two
inline constexpr unsigned kProtectMinShift = 10;  // durations <= 1024 ns share bucket 0

// The bucket of a duration of `ns`: 0 up to 1023 ns, then 4 per octave; the last
// (127, from ~2200 s) holds everything longer.
inline unsigned protect_bucket(uint64_t ns) noexcept {
  if (ns < (uint64_t{1} << kProtectMinShift)) return 0;
  unsigned msb = static_cast<unsigned>(63 - __builtin_clzll(ns));
  unsigned sub = static_cast<unsigned>(ns >> (msb - kProtectSubBits)) & ((1u << kProtectSubBits) - 1);
  unsigned k = 1 + ((msb - kProtectMinShift) << kProtectSubBits) + sub;
  return k < kProtectBuckets - 1 ? k : kProtectBuckets - 1;
}

// The lowest duration of bucket k (0 for bucket 0).
inline constexpr uint64_t protect_bucket_lo_ns(unsigned k) noexcept {
  if (k == 0) return 0;
  unsigned msb = ((k - 1) >> kProtectSubBits) + kProtectMinShift;
  uint64_t sub = (k - 1) & ((1u << kProtectSubBits) - 1);
  return (uint64_t{1} << msb) + (sub << (msb - kProtectSubBits));
}

// The protect block of a segment. bonsaictl (load/run, the controller) writes the
// configuration; the library reads `calls` once per limits install (untrusted: only
// bits of known calls are used) and adds to `hist`; the controller writes its status
// for `stat` (all relaxed: a reader may see one period's fields mixed with the next).
struct alignas(64) ShmProtect {
  std::atomic<uint64_t> calls;      // CallMask measured (0: nothing, the service is not protected)
  std::atomic<uint64_t> target_ns;  // the p99 target
  std::atomic<uint64_t> p99_ns;     // measured over the controller's last period (0: idle)
  std::atomic<uint64_t> samples;    // calls the p99 was taken over (the controller's window)
  std::atomic<uint64_t> decided_unix_ns;  // when the controller last decided
  std::atomic<uint32_t> decision;   // ProtectDecision
  std::atomic<uint32_t> controller_pid;
  std::atomic<uint64_t> periods;    // decisions made
  std::atomic<uint64_t> controller_start;  // its start time (/proc/PID/stat field 22; 0: unknown): a reused pid is not it
  std::atomic<uint64_t> hist[kProtectBuckets];
};
static_assert(sizeof(ShmProtect) == 64 + 8 * kProtectBuckets);

inline void protect_hist_add(ShmProtect* p, uint64_t ns) noexcept {
  if (p) p->hist[protect_bucket(ns)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace bonsai
