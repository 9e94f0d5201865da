// SPDX-License-Identifier: MIT
// Shares under the supervisor (bucket/share.h): a supervised program's calls on a rule
// with a ceiling are charged as the library charges them -- the ceiling, the guaranteed
// rate, borrowing from the host -- through the same core, in pieces as its other debt
// (bucket/debt.h). The host segment is mapped with the library's own code
// (shm/shm_host.h); without a usable one every rule is held to its rate.
#include <fmt/core.h>

#include "shm/shm_host.h"
#include "sys/clock.h"
#include "segment/shm_client.h"
#include "supervisor/sv_loop.h"
#include "supervisor/sv_say.h"

namespace bonsai::ctl {

void Loop::shares_refresh() {
  if (!view_.usable) return;
  bool any = false;
  for (uint32_t r = 0; r < view_.lim.set.count; ++r)
    any = any || view_.lim.set.rules[r].ceil > view_.lim.set.rules[r].rate;
  if (!any) return;
  char why[320];
  bool newer = false;
  if (!shm_host() && !shm_host_attach(shm_prefix().c_str(), why, sizeof why, &newer)) {
    static bool said = false;
    // A host segment of a newer layout: said once for the service, with its library
    // processes (the segment's notices word), not once per supervisor.
    if (!said && newer)
      said = seg_.seg().exited.notices.fetch_or(kNoticeNewerHost, std::memory_order_relaxed) & kNoticeNewerHost;
    if (!said) sv_say(fmt::format("bonsaictl supervisor ({}): shares: {}; every rule is held to its own rate{}\n",
                          seg_.service(), why[0] ? why : "no host capacity installed",
                          newer ? " (said once for the service)" : ""));
    said = true;
  }
  ShmHost* h = shm_host();
  uint64_t seq = h ? h->capacity.seq.load(std::memory_order_acquire) : 0;
  if (seq == view_.host_seq && seq && !(seq & 1)) return;
  view_.host_seq = seq;
  for (uint32_t r = 0; r < view_.lim.set.count; ++r) {
    const Rule& rule = view_.lim.set.rules[r];
    Rule cap;
    view_.host1[r] = 0;
    if (rule.ceil > rule.rate && shm_host_rule(rule.host1, cap) && share_params(rule, cap, view_.share[r]))
      view_.host1[r] = rule.host1;
  }
}

bool Loop::share_pay(Thread& th, Proc& p, Debt& d, uint64_t now) {
  (void)th;
  uint8_t b = d.bucket;
  ShmHost* h = shm_host();
  if (b >= kMaxRules || !view_.host1[b] || !h) return false;
  uint64_t units = 0;
  if (debt_share_piece(d, state(p, b), h->buckets[view_.host1[b] - 1], view_.share[b], now, kDefaultSlackNs,
                       &units) == ShareWay::Borrow)
    share_borrowed(b, units);
  return true;
}

PaceShare Loop::share_host(uint8_t b) {
  ShmHost* h = shm_host();
  if (!h || b >= kMaxRules || !view_.host1[b]) return {};
  return {&h->buckets[view_.host1[b] - 1], &view_.share[b]};
}

void Loop::share_borrowed(uint8_t b, uint64_t units) {
  if (units && b < kMaxRules && !lost_) seg_.seg().shares.borrowed[b].fetch_add(units, std::memory_order_relaxed);
}

}  // namespace bonsai::ctl
