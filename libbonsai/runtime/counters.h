// SPDX-License-Identifier: MIT
// Per-process, per-call accounting: a fixed, allocation-free block of relaxed atomic
// counters, laid out so that it can live in a shared-memory slot unchanged.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/calls.h"

namespace bonsai {

struct CallCounters {
  std::atomic<uint64_t> calls;      // calls made
  std::atomic<uint64_t> bytes;      // bytes moved (return values), data calls only
  std::atomic<uint64_t> throttled;  // calls that waited
  std::atomic<uint64_t> wait_ns;    // total time they waited
};
static_assert(sizeof(CallCounters) == 32);

struct alignas(64) ProcessCounters {
  CallCounters by_call[kCallCount];
};

inline void counters_reset(ProcessCounters& pc) noexcept {
  for (auto& c : pc.by_call) {
    c.calls.store(0, std::memory_order_relaxed);
    c.bytes.store(0, std::memory_order_relaxed);
    c.throttled.store(0, std::memory_order_relaxed);
    c.wait_ns.store(0, std::memory_order_relaxed);
  }
}

}  // namespace bonsai
