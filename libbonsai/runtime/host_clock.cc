// SPDX-License-Identifier: MIT
// This process's clock offset from the host's (see host_clock.h).
#include "runtime/host_clock.h"

#include <atomic>

#include "runtime/limiter_state.h"
#include "shm/shm_clock.h"

namespace bonsai {
namespace {

// This process's CLOCK_MONOTONIC minus the host's (a time namespace; see
// shm/shm_clock.h), read once per process (pid: a forked child may be in another
// namespace). Buckets, shared ones included, run on the host clock.
constinit std::atomic<int64_t> g_clock_offset{0};
constinit std::atomic<int> g_clock_offset_pid{0};

uint64_t clock_offset() noexcept {
  int pid = g_limiter.pid.load(std::memory_order_relaxed);
  if (g_clock_offset_pid.load(std::memory_order_acquire) != pid) [[unlikely]] {
    g_clock_offset.store(timens_mono_offset_read(), std::memory_order_relaxed);
    g_clock_offset_pid.store(pid, std::memory_order_release);
  }
  return static_cast<uint64_t>(g_clock_offset.load(std::memory_order_relaxed));
}

}  // namespace

uint64_t limiter_clock_offset() noexcept { return clock_offset(); }

}  // namespace bonsai
