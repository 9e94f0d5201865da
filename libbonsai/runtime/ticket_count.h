// SPDX-License-Identifier: MIT
// Counting a process's calls for whoever reads its counters (BONSAI_STATS, a service's
// slot: `bonsaictl stat`): calls, bytes, waits and the service's histogram of waits,
// per call name. Each thread adds to a lane of its own with unlocked adds (the fast
// path); a thread beyond kCounterLanes shares the last lane with atomic adds. Nothing is
// counted when nobody can read the counts (g_limiter.counters is then null).
#pragma once
#include <atomic>
#include <cstddef>
#include <sys/types.h>

#include "abi/counters_abi.h"
#include "abi/wait_hist.h"
#include "runtime/limiter_state.h"
#include "runtime/ticket.h"
#include "sys/lane_add.h"

namespace bonsai {

// Gives this thread its counter lane (limiter.cc). @return the lane plus one.
unsigned thread_lane_assign() noexcept __attribute__((noinline));

// Counts one application call that moved `moved` bytes (< 0: it failed). Nothing
// is counted when nobody can read the counters (no BONSAI_STATS, no service).
inline void ticket_count(const Ticket& t, ssize_t moved) noexcept {
  ProcessCounters* pc = g_limiter.counters;
  if (!pc) return;
  unsigned lane = t_thread.lane_plus1;
  if (!lane) [[unlikely]] lane = thread_lane_assign();
  auto c = static_cast<size_t>(t.call);
  CallLane& cl = pc->lanes[lane - 1].by_call[c];
  if (lane < kCounterLanes) [[likely]] {
    lane_add(cl.calls, 1);
    if (moved > 0) lane_add(cl.bytes, static_cast<uint64_t>(moved));
  } else {  // the shared overflow lane
    __atomic_fetch_add(&cl.calls, 1, __ATOMIC_RELAXED);
    if (moved > 0) __atomic_fetch_add(&cl.bytes, static_cast<uint64_t>(moved), __ATOMIC_RELAXED);
  }
  if (t.waited_ns) [[unlikely]] {
    pc->throttled[c].fetch_add(1, std::memory_order_relaxed);
    pc->wait_ns[c].fetch_add(t.waited_ns, std::memory_order_relaxed);
    wait_hist_add(g_limiter.wait_hist, t.call, t.waited_ns);
  }
}

}  // namespace bonsai
