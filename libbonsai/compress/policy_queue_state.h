// SPDX-License-Identifier: MIT
// The `queue` policy's state, one per connection (embedded in PolicyState,
// compress/policy_row.h): the level, the visible bandwidth measured at each level and
// the levels forbidden for a while. The update that moves it: compress/policy_queue.h.
// Data only.
#pragma once
#include <cstdint>

#include "compress/codec.h"

namespace bonsai::compress {

struct QueueState {
  uint8_t level;
  uint8_t nlevels;
  int prev_n;
  double bw[kMaxLevels];             // visible bandwidth per level (EWMA, bytes/s; 0: unknown)
  uint64_t bw_at[kMaxLevels];        // when bw[] was last updated
  uint64_t forbidden_until[kMaxLevels];
};

}  // namespace bonsai::compress
