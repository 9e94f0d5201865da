// SPDX-License-Identifier: MIT
// Limits from two places made one (see limits_merge.h).
#include "config/limits_merge.h"

#include <fmt/core.h>

#include "abi/limit_parse.h"

namespace bonsai::ctl {

namespace {

std::string text_of(const Rule& r) {
  char buf[256];
  rule_format(r, buf, sizeof buf);
  return buf;
}

}  // namespace

bool limits_merge(LimitSet& base, const LimitSet& extra, std::string& why) {
  LimitSet out{};
  for (uint32_t i = 0; i < base.count && i < kMaxRules; ++i) {
    Rule o = base.rules[i];
    for (uint32_t j = 0; j < extra.count && j < kMaxRules && o.calls; ++j) {
      const Rule& n = extra.rules[j];
      if (!(o.calls & n.calls) || !(o.fd_mask & n.fd_mask)) continue;  // nothing in common
      if ((n.fd_mask & o.fd_mask) == o.fd_mask) {
        o.calls &= ~n.calls;  // the new rule takes the shared calls on every kind the old one had
      } else if ((o.calls & ~n.calls) == 0) {
        o.fd_mask &= static_cast<uint8_t>(~n.fd_mask);  // it takes some kinds of all the old one's calls
      } else {
        // What is left is two pieces (other calls on every kind, the shared calls on the
        // other kinds): two buckets where there was one would double the old rule's rate.
        why = fmt::format("'{}' takes some calls of '{}' on some descriptors only: what is left of it is not one "
                          "rule; give the limits whole (without --merge), e.g. split '{}' first",
                          text_of(n), text_of(base.rules[i]), text_of(base.rules[i]));
        return false;
      }
    }
    if (o.calls) out.rules[out.count++] = o;
  }
  for (uint32_t i = 0; i < extra.count && i < kMaxRules; ++i) {
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
