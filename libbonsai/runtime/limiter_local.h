// SPDX-License-Identifier: MIT
// The process's own limiter state, used by the set-up (limiter_setup.cc), the waits and
// credit (limiter.cc) and installs (limiter_install.cc) only: the buckets, counters and
// shares accounting a process uses when no service segment provides them, and its count
// of counter lanes handed out (defined in limiter_state.cc). Everyone else goes through
// g_limiter (limiter_state.h).
#pragma once
#include <atomic>

#include "abi/bucket_state.h"
#include "abi/counters_abi.h"
#include "abi/limits_abi.h"
#include "abi/shm_abi.h"

namespace bonsai {

extern constinit BucketState g_local_buckets[kMaxRules];
extern constinit ProcessCounters g_local_counters;
extern constinit ShmShares g_local_shares;
extern constinit std::atomic<unsigned> g_lanes_used;

}  // namespace bonsai
