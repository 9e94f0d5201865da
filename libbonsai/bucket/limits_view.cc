// SPDX-License-Identifier: MIT
// Building a view (see limits_view.h).
#include "bucket/limits_view.h"

namespace bonsai {

bool limits_view_build(const LimitSet& set, LimitsView& v) noexcept {
  v.set = set;
  if (v.set.count > kMaxRules) v.set.count = kMaxRules;
  if (!bucket_table_build(v.set, v.table, nullptr)) return false;
  for (uint32_t r = 0; r < v.set.count; ++r) v.params[r] = bucket_params(v.set.rules[r]);
  return true;
}

void buckets_renumbered(BucketState* states, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) bucket_reset_clock(states[i]);
}

}  // namespace bonsai
