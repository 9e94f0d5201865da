// SPDX-License-Identifier: MIT
// The limiter's state (see limiter_state.h and limiter_local.h): zero at load, written
// by the set-up. Here alone so that every part of the limiter can name it without
// depending on another part's code.
#include "runtime/limiter_state.h"

#include "runtime/limiter_local.h"

namespace bonsai {

constinit Limiter g_limiter{};
constinit thread_local ThreadState t_thread{};

// The process's own (runtime/limiter_local.h).
constinit BucketState g_local_buckets[kMaxRules]{};
constinit ProcessCounters g_local_counters{};
constinit ShmShares g_local_shares{};
constinit std::atomic<unsigned> g_lanes_used{0};

}  // namespace bonsai
