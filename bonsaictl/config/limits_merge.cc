// SPDX-License-Identifier: MIT
// Limits from two places made one (see limits_merge.h).
#include "config/limits_merge.h"

#include <fmt/core.h>

namespace bonsai::ctl {

bool limits_merge(LimitSet& base, const LimitSet& extra, std::string& why) {
  CallMask replaced = 0;
  for (uint32_t i = 0; i < extra.count; ++i) replaced |= extra.rules[i].calls;
  LimitSet out{};
  for (uint32_t i = 0; i < base.count; ++i)
    if (!(base.rules[i].calls & replaced)) out.rules[out.count++] = base.rules[i];
  for (uint32_t i = 0; i < extra.count; ++i) {
    if (out.count == kMaxRules) {
      why = fmt::format("more than {} rules", kMaxRules);
      return false;
    }
    out.rules[out.count++] = extra.rules[i];
  }
  base = out;
  return true;
}

}  // namespace bonsai::ctl
