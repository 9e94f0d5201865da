// SPDX-License-Identifier: MIT
// Per-process, per-call accounting, allocation-free and laid out so that it can
// live in a shared-memory slot unchanged. Each thread owns a lane of (calls, bytes)
// counters and bumps them with unlocked one-instruction adds; threads beyond the
// owned lanes share the last lane with locked adds. Readers sum the lanes. Slow-path
// counters (throttled, wait, wire bytes of compressed sockets) are plain atomics.
// The layout is ABI: every ShmSlot publishes one (abi/shm_abi.h); bump
// BONSAI_ABI_VERSION on any change.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/calls.h"
#include "sys/lane_add.h"

namespace bonsai {

inline constexpr unsigned kCounterLanes = 16;  // lane kCounterLanes-1 is shared

struct CallLane {
  uint64_t calls;  // calls made
  uint64_t bytes;  // application bytes moved (return values); on one cache line with `calls`
};

struct LaneCounters {
  CallLane by_call[kCallCount];
};

struct alignas(64) ProcessCounters {
  LaneCounters lanes[kCounterLanes];
  std::atomic<uint64_t> throttled[kCallCount];  // slow path only
  std::atomic<uint64_t> wait_ns[kCallCount];
  // Bytes on the wire of transfers on compressed sockets (0 for plain calls). Not in
  // the lanes: framed calls are a slow path already, and 16 lanes of a third counter
  // would push a 256-slot segment past 3 MiB.
  std::atomic<uint64_t> wire_bytes[kCallCount];
  // Calls on descriptors that must not wait (runtime/pace.h): refused with EAGAIN for
  // the cap, shortened for it, and the time their descriptors were held not ready.
  std::atomic<uint64_t> refused[kCallCount];
  std::atomic<uint64_t> shortened[kCallCount];
  std::atomic<uint64_t> held_ns[kCallCount];
};

struct CallTotals {
  uint64_t calls, bytes, throttled, wait_ns, wire_bytes;
  uint64_t refused = 0, shortened = 0, held_ns = 0;
};

inline CallTotals counters_total(const ProcessCounters& pc, CallId id) noexcept {
  auto c = static_cast<size_t>(id);
  CallTotals t{0, 0, pc.throttled[c].load(std::memory_order_relaxed), pc.wait_ns[c].load(std::memory_order_relaxed),
               pc.wire_bytes[c].load(std::memory_order_relaxed), pc.refused[c].load(std::memory_order_relaxed),
               pc.shortened[c].load(std::memory_order_relaxed), pc.held_ns[c].load(std::memory_order_relaxed)};
  for (const auto& lane : pc.lanes) {
    t.calls += lane_load(lane.by_call[c].calls);
    t.bytes += lane_load(lane.by_call[c].bytes);
  }
  return t;
}

inline void counters_reset(ProcessCounters& pc) noexcept {
  for (auto& lane : pc.lanes)
    for (size_t c = 0; c < kCallCount; ++c) {
      __atomic_store_n(&lane.by_call[c].calls, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&lane.by_call[c].bytes, 0, __ATOMIC_RELAXED);
    }
  for (size_t c = 0; c < kCallCount; ++c) {
    pc.throttled[c].store(0, std::memory_order_relaxed);
    pc.wait_ns[c].store(0, std::memory_order_relaxed);
    pc.wire_bytes[c].store(0, std::memory_order_relaxed);
    pc.refused[c].store(0, std::memory_order_relaxed);
    pc.shortened[c].store(0, std::memory_order_relaxed);
    pc.held_ns[c].store(0, std::memory_order_relaxed);
  }
}

}  // namespace bonsai
