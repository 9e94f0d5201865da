// SPDX-License-Identifier: MIT
// Shares accounting for `stat`, `top` and the metrics (see stat_snapshot.h ShareStat):
// a service's per-rule counters, and what the host lent, summed over the services of
// this user under this prefix that borrow from the same capacity rule. Untrusted: a
// rule index or count out of range is skipped, another service's damaged segment is
// left out of the sum.
#include <fmt/core.h>
#include <map>

#include "abi/limit_parse.h"
#include "base/diag.h"
#include "segment/host_client.h"
#include "segment/shm_client.h"
#include "stat/stat_snapshot.h"
#include "sys/clock.h"

namespace bonsai::ctl {
namespace {

std::string rule_text(const Rule& r) {
  char buf[256];
  rule_format(r, buf, sizeof buf);
  return buf;
}

// Units borrowed under capacity rule `host1` by every service of this user. Kept for
// 100 ms: `stat` of every service would otherwise read every segment once per service.
uint64_t lent_under(uint8_t host1) {
  static std::map<std::pair<unsigned, uint8_t>, std::pair<uint64_t, uint64_t>> recent;  // -> (when, sum)
  auto key = std::make_pair(ctl_uid(), host1);
  uint64_t now = mono_ns();
  if (auto it = recent.find(key); it != recent.end() && now - it->second.first < 100'000'000) return it->second.second;
  uint64_t sum = 0;
  for (const std::string& name : services_list()) {
    try {
      auto seg = Segment::open(name, false);
      uint64_t seq;
      LimitSet set = limits_read_checked(*seg, seq);
      seg->guarded([&] {
        for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r)
          if (set.rules[r].host1 == host1 && rule_ceil_above(set.rules[r]))
            sum += seg->seg().shares.borrowed[r].load(std::memory_order_relaxed);
      });
    } catch (const CtlError&) {  // gone or damaged meanwhile: not counted
    }
  }
  recent[key] = {now, sum};
  return sum;
}

}  // namespace

void shares_snapshot(Segment& seg, ServiceStat& s) {
  LimitSet cap{};
  bool have_cap = false;
  for (uint32_t r = 0; r < s.limits.count && r < kMaxRules; ++r) {
    const Rule& rule = s.limits.rules[r];
    if (!rule_ceil_above(rule)) continue;
    if (!have_cap) have_cap = host_read(cap) || (cap = LimitSet{}, true);
    ShareStat st;
    st.rule = r;
    st.text = rule_text(rule);
    if (rule.host1 && rule.host1 <= cap.count) st.capacity = rule_text(cap.rules[rule.host1 - 1]);
    seg.guarded([&] {
      const ShmShares& sh = seg.seg().shares;
      st.borrowed = sh.borrowed[r].load(std::memory_order_relaxed);
      st.held_rate_ns = sh.held_rate_ns[r].load(std::memory_order_relaxed);
      st.held_ceil_ns = sh.held_ceil_ns[r].load(std::memory_order_relaxed);
    });
    if (!st.capacity.empty()) st.host_lent = lent_under(rule.host1);
    s.shares.push_back(std::move(st));
  }
}

}  // namespace bonsai::ctl
