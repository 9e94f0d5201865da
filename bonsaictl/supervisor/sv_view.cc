// SPDX-License-Identifier: MIT
// The supervisor's view of the service's limits (sv_view.h): read from the segment and
// built as the library builds them, the fleet fallback, the share parameters.
#include "supervisor/sv_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "bucket/fleet_lease.h"
#include "bucket/limits_carry.h"
#include "shm/seqlock.h"
#include "shm/shm_guard.h"
#include "shm/shm_fd.h"
#include "shm/shm_host.h"
#include "shm/shm_siblings.h"
#include "supervisor/sv_say.h"
#include "supervisor/sv_syscalls.h"
#include "sys/clock.h"

namespace bonsai::ctl {

void SvLimits::refresh() {
  ShmSegment& s = seg_.seg();
  if (!lost_ && shm_guard_lost(&s)) {
    // As the library does: the limits in force stay, with this supervisor's own
    // buckets (the zeroed mapping reads as scope `process`); counts go nowhere.
    lost_ = true;
    sv_say(fmt::format("bonsaictl supervisor ({}): the service's segment was truncated or damaged: keeping the "
               "limits in force with the supervisor's own buckets; restart the service to rejoin it\n",
               seg_.service()));
    if (follower_) follower_->view_lost();
  }
  if (lost_) return;
  shares_refresh();  // a capacity changed by `load` (cheap when nothing shares)
  uint64_t seq_now = s.limits.seq.load(std::memory_order_acquire);
  if (view_.seq == seq_now && view_.seq) return fleet_lapse_check();
  // protect: the reads this supervisor times, read again at each limits change (untrusted: masked).
  protect_calls_ = s.protect.calls.load(std::memory_order_relaxed) & kSvTimedCalls;
  LimitSet set{};
  uint64_t seq = 0;
  if (!seqlock_read(s.limits, set, seq, 100)) return;  // a writer is busy: next time
  // Truncated while we read: the guard's zeroes read as "no limits" with seq 0 (a
  // live segment's seq starts at 2). Never install them; the next refresh sees lost.
  if (seq == 0 || shm_guard_lost(&s)) return;
  fleet_fallback_ = false;  // the agent wrote new limits (a renewal): they are in force
  install(set, seq, true);
  fleet_lapse_check();
}

// Fleet caps (docs/reference/fleet.md): the limits are this host's grant, good until the lease
// runs out. As the library does (runtime/fleet_lapse.h, bucket/fleet_lease.h): once it
// has, the fallback rates (the cap / live hosts) are in force until the agent writes
// limits again -- never the last grant, never unlimited.
void SvLimits::fleet_lapse_check() {
  if (fleet_fallback_ || !view_.usable || lost_) return;
  ShmFleet& f = seg_.seg().fleet;
  uint64_t exp = f.lease_expiry_ns.load(std::memory_order_acquire);
  if (!exp || mono_ns() < exp) return;
  LimitSet fallback{};
  fleet_fallback_set(view_.lim.set, f.cap, f.fallback, fallback);
  fleet_fallback_ = true;
  f.lib_fallbacks.fetch_add(1, std::memory_order_relaxed);
  if (!said_fallback_)
    sv_say(fmt::format("bonsaictl supervisor ({}): fleet lease ran out (the fleet agent or its store is away): "
                       "running at the fallback rate (the fleet cap / live hosts) until it is renewed\n",
                       seg_.service()));
  said_fallback_ = true;
  install(fallback, view_.seq, false);
}

void SvLimits::install(const LimitSet& set, uint64_t seq, bool from_segment) {
  SvView v;
  v.seq = seq;
  const char* problem = limits_problem(set);
  if (!problem && !limits_view_build(set, v.lim)) problem = "two rules share a call";
  if (problem) {  // as the library: the limits in force stay (none at first)
    if (view_.seq != seq)
      sv_say(fmt::format("bonsaictl supervisor ({}): the service's limits changed but are unusable ({}); keeping "
                 "the old ones\n", seg_.service(), problem));
    view_.seq = seq;
    return;
  }
  v.usable = true;
  if (view_.seq && from_segment) say_unseen(v.lim.set);
  // The buckets keep their state across the change (bucket/limits_carry.h), as in the
  // library: the followers carry this supervisor's per-process buckets over (the
  // service's shared ones are carried by bonsaictl when it writes the limits), what
  // threads owe follows its rule, held calls are re-timed at the new rates (a removed
  // rule lets them go), calls not settled yet are charged to the rules that continue theirs.
  LimitsView none{};
  const LimitsView& prev = view_.usable ? view_.lim : none;
  uint8_t from[kMaxRules];
  limits_match(prev.set, v.lim.set, from);
  uint8_t to[kMaxRules];  // old bucket -> new bucket
  for (auto& b : to) b = kNoBucket;
  for (uint32_t i = 0; i < v.lim.set.count; ++i)
    if (from[i] != kNoBucket) to[from[i]] = static_cast<uint8_t>(i);
  uint64_t now = mono_ns();
  LimitsView before = prev;  // a copy: the view is replaced now
  view_ = v;
  shares_refresh();
  if (follower_) follower_->view_changed(before, to, seq, now);
}

// New limits on system calls the filter does not notify cannot reach this tree: say so.
void SvLimits::say_unseen(const LimitSet& set) {
  std::string missing;
  for (int nr : sv_notified_syscalls(set))
    if (std::find(notified_.begin(), notified_.end(), nr) == notified_.end())
      if (const SvSyscall* sc = sv_syscall(nr)) missing += (missing.empty() ? "" : ", ") + std::string(sc->name);
  if (!missing.empty())
    sv_say(fmt::format("bonsaictl supervisor ({}): the new limits name system calls this supervised program was "
               "not started with ({}): they apply to it only after a restart\n", seg_.service(), missing));
}

// Shares under the supervisor (bucket/share.h): a supervised program's calls on a rule
// with a ceiling are charged as the library charges them -- the ceiling, the guaranteed
// rate, borrowing from the host -- through the same core. The host segment is mapped
// with the library's own code (shm/shm_host.h); without a usable one every rule is held
// to its rate.
void SvLimits::shares_refresh() {
  if (!view_.usable) return;
  bool any = false;
  for (uint32_t r = 0; r < view_.lim.set.count; ++r)
    any = any || rule_ceil_above(view_.lim.set.rules[r]);
  if (!any) return;
  char why[320];
  bool newer = false;
  if (!shm_host() && !shm_host_attach(shm_prefix().c_str(), why, sizeof why, &newer)) {
    // A host segment of a newer layout: said once for the service, with its library
    // processes (the segment's notices word), not once per supervisor.
    if (!said_shares_ && newer)
      said_shares_ = seg_.seg().exited.notices.fetch_or(kNoticeNewerHost, std::memory_order_relaxed) & kNoticeNewerHost;
    if (!said_shares_) sv_say(fmt::format("bonsaictl supervisor ({}): shares: {}; every rule is held to its own rate{}\n",
                                          seg_.service(), why[0] ? why : "no host capacity installed",
                                          newer ? " (said once for the service)" : ""));
    said_shares_ = true;
  }
  ShmHost* h = shm_host();
  uint64_t seq = h ? h->capacity.seq.load(std::memory_order_acquire) : 0;
  if (seq != view_.host_seq || !seq || (seq & 1)) {
    view_.host_seq = seq;
    for (uint32_t r = 0; r < view_.lim.set.count; ++r) {
      const Rule& rule = view_.lim.set.rules[r];
      Rule cap;
      view_.host1[r] = 0;
      view_.reserved[r] = 0;
      if (rule_ceil_above(rule) && shm_host_rule(rule.host1, cap) && share_params(rule, cap, view_.share[r]))
        view_.host1[r] = rule.host1, view_.cap[r] = cap;
    }
  }
  // What the user's containers take at their rates the host's bucket never sees is not
  // lendable, as in the library (runtime/share_wait.cc).
  uint64_t now = mono_ns();
  for (uint32_t r = 0; r < view_.lim.set.count && r < kMaxRules; ++r) {
    if (!view_.host1[r]) continue;
    uint64_t res = shm_siblings_reserved(shm_prefix().c_str(), shm_owner_uid(), view_.host1[r], now);
    if (res == view_.reserved[r]) continue;
    Rule cap = view_.cap[r];
    rule_set_rate(cap, share_host_rate(view_.cap[r].rate, res));
    ShareParams p;
    if (share_params(view_.lim.set.rules[r], cap, p)) view_.share[r] = p, view_.reserved[r] = res;
  }
}

PaceShare SvLimits::share_host(uint8_t b) const {
  ShmHost* h = shm_host();
  if (!h || b >= kMaxRules || !view_.host1[b]) return {};
  return {&h->buckets[view_.host1[b] - 1], &view_.share[b]};
}

void SvLimits::share_borrowed(uint8_t b, uint64_t units) {
  if (units && b < kMaxRules && !lost_) seg_.seg().shares.borrowed[b].fetch_add(units, std::memory_order_relaxed);
}

}  // namespace bonsai::ctl
