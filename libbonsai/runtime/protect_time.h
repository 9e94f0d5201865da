// SPDX-License-Identifier: MIT
// Protect timing: a real call's own duration, for the calls of a protected service that
// its `protect:` names (g_limiter.protect_calls, from the segment), added to the
// service's histogram (abi/protect_hist.h) that bonsaictl's protect controller reads
// (docs/reference/protect.md). Only in the limited path (a service's processes always take it);
// one relaxed load of process memory for the other calls. All inline.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/calls.h"
#include "abi/protect_hist.h"
#include "abi/shm_abi.h"
#include "runtime/limiter_state.h"
#include "sys/clock.h"

namespace bonsai {

// @return the start of the real call, or 0 if the call is not timed.
inline uint64_t protect_start(CallId call) noexcept {
  if (!(g_limiter.protect_calls.load(std::memory_order_relaxed) & call_bit(call))) [[likely]] return 0;
  return mono_ns() | 1;
}
inline void protect_end(uint64_t start) noexcept {
  if (!start) [[likely]] return;
  uint64_t now = mono_ns();
  protect_hist_add(g_limiter.protect, now > start ? now - start : 0);
}
// A call made in several real calls (wrap::transfer_split) is timed as one: the sum of
// its real calls' own times (not the waits between them), added once.
inline uint64_t protect_lap(uint64_t start) noexcept {
  if (!start) [[likely]] return 0;
  uint64_t now = mono_ns();
  return now > start ? now - start : 1;
}
inline void protect_add(uint64_t ns) noexcept {
  if (ns && g_limiter.protect) protect_hist_add(g_limiter.protect, ns);
}
// Re-reads the segment's protect calls (untrusted: unknown bits dropped).
inline void protect_refresh() noexcept {
  ShmProtect* p = g_limiter.protect;
  uint64_t calls = p ? p->calls.load(std::memory_order_relaxed) & (kCallCount >= 64 ? ~CallMask{0} : (CallMask{1} << (kCallCount % 64)) - 1) : 0;
  g_limiter.protect_calls.store(calls, std::memory_order_relaxed);
}

}  // namespace bonsai
