// SPDX-License-Identifier: MIT
// The `queue` policy: AdOC's compression level update (Jeannot, Figure 2) with its
// divergence guard (section 5): if a level delivers less visible bandwidth than a
// smaller one, go back to the better one and forbid this one for a second.
// Pure: queue length, time and bandwidth in, level out.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_queue_state.h"

namespace bonsai::compress {


void queue_init(QueueState& s, uint8_t nlevels) noexcept;

// One update. `n`: emission queue length in 8 KiB packets; `visible_bw`: application
// bytes per second seen at the current level since the last update; `now_ns`:
// monotonic time. @return the next level index (also in s.level).
uint8_t queue_next(QueueState& s, int n, double visible_bw, uint64_t now_ns) noexcept;

}  // namespace bonsai::compress
