// SPDX-License-Identifier: MIT
// The process's own limiter state, shared by limiter.cc (the view ring, waiting and
// credit) and limiter_setup.cc (set-up and fork) only: the buckets, counters and shares
// accounting a process uses when no service segment provides them, and its count of
// counter lanes handed out; the view ring and the set BONSAI_LIMITS is parsed into.
// Everyone else goes through g_limiter (limiter.h).
#pragma once
#include <atomic>

#include "abi/bucket_state.h"
#include "abi/counters_abi.h"
#include "abi/shm_abi.h"
#include "bucket/limits_view.h"
#include "abi/limits_abi.h"

namespace bonsai {

extern constinit BucketState g_local_buckets[kMaxRules];
extern constinit ProcessCounters g_local_counters;
extern constinit ShmShares g_local_shares;
extern constinit std::atomic<unsigned> g_lanes_used;

// The ring of views (limiter.cc) and, just before its first slot, the set BONSAI_LIMITS
// is parsed into (limiter_setup.cc). A process's first install builds its view in
// place in that slot (limiter_install), so a start with limits writes the ring's
// counters, the set and the view's head: two .bss pages, the struct starting one
// (issue #34; tests/preload/startup_pages prints the pages a start writes).
inline constexpr size_t kViewRing = 16;
struct alignas(4096) ViewRing {
  std::atomic<size_t> next_view;   // the slot the next install takes (mod kViewRing)
  std::atomic<uint64_t> last_gen;  // even; each install takes the next two
  LimitSet env_limits;
  LimitsView views[kViewRing];
};
extern constinit ViewRing g_ring;

}  // namespace bonsai
