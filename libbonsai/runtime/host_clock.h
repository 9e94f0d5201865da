// SPDX-License-Identifier: MIT
// Buckets, shared ones included, run on the host's CLOCK_MONOTONIC: a process in a time
// namespace subtracts its offset (shm/shm_clock.h), read once per process (a forked
// child may be in another namespace: keyed by g_limiter.pid). Slow paths only.
#pragma once
#include <cstdint>

namespace bonsai {

// This process's CLOCK_MONOTONIC minus the host's (buckets run on the host's clock).
uint64_t limiter_clock_offset() noexcept;

}  // namespace bonsai
