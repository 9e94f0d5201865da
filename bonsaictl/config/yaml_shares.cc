// SPDX-License-Identifier: MIT
// Shares in the configuration (see yaml_load.h shares_check): the guarantees under each
// capacity rule must fit in it, a ceil needs a capacity to borrow from. One rule of a
// service counts once (scope `process` guarantees each process its rate: the check
// cannot know how many there will be; docs/reference/shares.md says so).
#include <fmt/core.h>

#include "abi/limit_parse.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {
namespace {

std::string rate_text(const Rule& r) {
  Rule one = r;
  one.calls = call_bit(CallId::read);
  one.burst = 0;
  one.ceil = 0;
  one.fd_mask = kAnyFd;
  char buf[96];
  rule_format(one, buf, sizeof buf);
  std::string s(buf);
  return s.substr(s.find('=') + 1);
}

}  // namespace

void shares_check(Config& cfg, std::vector<Diag>& diags) {
  const LimitSet& cap = cfg.capacity;
  std::vector<unsigned __int128> sum(cap.count, 0);
  std::vector<std::string> who(cap.count);
  for (ServiceConfig& svc : cfg.services) {
    // Every rule under a capacity rule, sharing or not, is guaranteed its rate there.
    LimitSet all = svc.limits;
    for (uint32_t r = 0; r < all.count; ++r) all.rules[r].ceil = all.rules[r].rate + 1;
    shares_resolve(all, cap);
    for (uint32_t r = 0; r < all.count; ++r) {
      const Rule& rule = svc.limits.rules[r];
      uint8_t h1 = all.rules[r].host1;
      if (h1) {
        sum[h1 - 1] += rule_rate_micro(rule);
        if (who[h1 - 1].size() < 200) who[h1 - 1] += fmt::format("{}{} {}", who[h1 - 1].empty() ? "" : ", ", svc.name,
                                                                 rate_text(rule));
      } else if (rule_ceil_above(rule) && r < svc.rule_marks.size()) {
        diags.push_back(diag_at(cfg.file, svc.rule_marks[r],
                                fmt::format("service '{}': a ceil needs a 'host: capacity:' rule over its calls "
                                            "(in the same unit) to borrow from",
                                            svc.name)));
      }
    }
    shares_resolve(svc.limits, cap);
  }
  for (uint32_t h = 0; h < cap.count; ++h) {
    if (sum[h] <= rule_rate_micro(cap.rules[h]) || h >= cfg.capacity_marks.size()) continue;
    Rule total = cap.rules[h];
    constexpr uint64_t kMost = kMaxRate * kRateMicro;  // what rule_format shows; the sum may be more
    rule_set_rate_micro(total, sum[h] > kMost ? kMost : static_cast<uint64_t>(sum[h]));
    diags.push_back(diag_at(cfg.file, cfg.capacity_marks[h],
                            fmt::format("the rates under this capacity add up to {}, more than its {} ({})",
                                        rate_text(total), rate_text(cap.rules[h]), who[h])));
  }
}

}  // namespace bonsai::ctl
