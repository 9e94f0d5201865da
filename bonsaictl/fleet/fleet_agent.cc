// SPDX-License-Identifier: MIT
// A fleet service's period (see fleet_agent.h).
#include "fleet/fleet_agent.h"

#include <fmt/core.h>
#include <unistd.h>

#include "abi/limit_parse.h"
#include "fleet/fleet_script.h"
#include "shm/seqlock.h"
#include "shm/shm_slots.h"
#include "sys/clock.h"

namespace bonsai::ctl {

namespace {
uint64_t units_of(const CallTotals& t, RateUnit u) { return u == RateUnit::Calls ? t.calls : t.bytes; }
}  // namespace

FleetService::FleetService(std::unique_ptr<Segment> seg, FleetTrusted trusted, std::string host_id, std::string token)
    : seg_(std::move(seg)), trusted_(std::move(trusted)), host_id_(std::move(host_id)), token_(std::move(token)) {
  ShmFleet& f = seg_->seg().fleet;
  for (uint32_t r = 0; r < trusted_.rules.count; ++r) {
    caps_[r] = trusted_.rules.rules[r].rate;
    fallback_[r] = fleet_fallback_rate(caps_[r], 0, trusted_.fleet.expected_hosts);
  }
  uint64_t most = mono_ns() + kFleetLeasePeriods * uint64_t{trusted_.fleet.period_ms} * 1'000'000;
  seg_->guarded([&] {
    f.agent_pid.store(static_cast<int32_t>(getpid()), std::memory_order_relaxed);
    size_t n = host_id_.size() < kFleetHostIdMax - 1 ? host_id_.size() : kFleetHostIdMax - 1;
    for (size_t i = 0; i < kFleetHostIdMax; ++i) f.host_id[i] = i < n ? host_id_[i] : '\0';
    expiry_ns_ = f.lease_expiry_ns.load(std::memory_order_relaxed);  // a restarted agent's predecessor's lease
  });
  if (expiry_ns_ > most) expiry_ns_ = most;  // untrusted: no lease runs longer than one the agent gives
}

void FleetService::say(const std::string& what) {
  if (what == said_) return;
  said_ = what;
  if (!what.empty()) fmt::print(stderr, "bonsaictl fleet-agent: {}: {}\n", name(), what);
}

// Units moved so far per rule, live processes and exited ones together (the counters
// name calls, not descriptors: a rule with `fd:` counts its calls on every kind).
void FleetService::usage_read(const LimitSet& rules, std::array<uint64_t, kMaxRules>& total) {
  ShmSegment& seg = seg_->seg();
  total.fill(0);
  seg_->guarded([&] {
    slots_reclaim_dead(seg);
    unsigned end = slots_scan_end(seg);
    for (uint32_t r = 0; r < rules.count; ++r) {
      const Rule& rule = rules.rules[r];
      for (size_t c = 0; c < kCallCount; ++c) {
        if (!(rule.calls & (CallMask{1} << c))) continue;
        auto id = static_cast<CallId>(c);
        total[r] += rule.unit == RateUnit::Calls ? seg.exited.calls[c].load(std::memory_order_relaxed)
                                                 : seg.exited.bytes[c].load(std::memory_order_relaxed);
        for (unsigned i = 0; i < end; ++i)
          if (seg.slots[i].state.load(std::memory_order_acquire) == static_cast<uint32_t>(SlotState::Live))
            total[r] += units_of(counters_total(seg.slots[i].counters, id), rule.unit);
      }
    }
  });
}

void FleetService::step(uint64_t now_ns) {
  // Everything that decides where the agent connects, what it sends and what it asks
  // for is the trusted configuration's (checked when it was read, config/fleet_trusted.h).
  const uint32_t period_ms = trusted_.fleet.period_ms;
  const std::string& store = trusted_.fleet.store;
  const std::string& password_file = trusted_.fleet.password_file;
  const std::string& sentinel_password_file = trusted_.fleet.sentinel_password_file;
  const std::string& fleet_ns = trusted_.fleet.fleet_namespace;
  uint64_t period_ns = uint64_t{period_ms} * 1'000'000;
  next_ns_ = next_ns_ && now_ns < next_ns_ + period_ns ? next_ns_ + period_ns : now_ns + period_ns;

  ShmFleet& f = seg_->seg().fleet;
  const LimitSet& rules = trusted_.rules;
  const std::array<uint64_t, kMaxRules>& caps = caps_;
  std::array<uint64_t, kMaxRules> total{};
  usage_read(rules, total);
  std::array<uint64_t, kMaxRules> used{};
  for (uint32_t r = 0; r < rules.count; ++r) {
    used[r] = primed_ && total[r] > last_total_[r] ? total[r] - last_total_[r] : 0;
    last_total_[r] = total[r];
    // The counters are the tenant's to write: what it reports used is at most what a
    // period of the whole cap lets through, twice (a burst), so a forged count cannot
    // make this host owe, or report, without bound.
    uint64_t cap_period = caps[r] / 1000 * period_ms + caps[r] % 1000 * period_ms / 1000;
    if (used[r] > 2 * cap_period + 1) used[r] = 2 * cap_period + 1;
    if (lapsed_) lapse_used_[r] += used[r];
  }
  primed_ = true;

  uint32_t live = live_;
  std::vector<std::string> args{host_id_, token_, std::to_string(period_ns / 1000), std::to_string(rules.count)};
  std::array<uint64_t, kMaxRules> want{}, repay{};
  for (uint32_t r = 0; r < rules.count; ++r) {
    uint64_t cap_period = caps[r] / 1000 * period_ms + caps[r] % 1000 * period_ms / 1000;
    if (cap_period == 0) cap_period = 1;
    // Backlog: how far the host's shared bucket is taken ahead of now, at its rate.
    uint64_t tat = 0;
    seg_->guarded([&] { tat = seg_->seg().buckets[r].tat_ns.load(std::memory_order_relaxed); });
    uint64_t now = mono_ns();
    uint64_t ahead = tat > now && tat - now < 10 * period_ns ? tat - now : 0;
    uint64_t backlog = static_cast<uint64_t>(static_cast<double>(ahead) * static_cast<double>(rules.rules[r].rate) / 1e9);
    want[r] = fleet_want(demand_[r], {used[r], backlog, granted_[r], cap_period, fleet_min_want(cap_period, live)});
    if (want[r] > cap_period) want[r] = cap_period;  // never more than a period of the trusted cap
    repay[r] = fleet_repay_step(owed_[r], owed_start_[r]);
    for (uint64_t v : {caps[r], want[r], used[r], repay[r]}) args.push_back(std::to_string(v));
  }
  seg_->guarded([&] {
    for (uint32_t r = 0; r < rules.count; ++r) f.want[r].store(want[r], std::memory_order_relaxed);
  });

  uint64_t timeout = period_ns / 2 > 20'000'000 ? period_ns / 2 : 20'000'000;
  if (timeout > 1'000'000'000) timeout = 1'000'000'000;
  LeaseReply reply;
  std::string why = redis_.ensure(store, password_file, timeout, sentinel_password_file);
  if (why.empty()) why = redis_.lease(fleet_key_prefix(fleet_ns, name()), args, rules.count, reply);
  if (!why.empty()) return on_failure(why, mono_ns());
  for (uint32_t r = 0; r < rules.count; ++r) {
    if (reply.granted[r] > want[r]) reply.granted[r] = want[r];  // never more than asked: a bad store is bounded
    owed_[r] -= repay[r] < owed_[r] ? repay[r] : owed_[r];
  }
  publish(rules, caps, reply, mono_ns(), period_ns);
  if (reply.clash != clash_) {  // said when it starts and when it ends, whatever else is said
    clash_ = reply.clash;
    fmt::print(stderr, "bonsaictl fleet-agent: {}: {}\n", name(),
               clash_ ? fmt::format("HOST ID CLASH: another agent calls the store as host '{}' too (a cloned machine, "
                                    "or host names cut to {} characters? or an agent restarting over and over): the "
                                    "two hosts count as one and share one host's share; give each its own --host-id",
                                    host_id_, kFleetHostIdMax - 1)
                      : fmt::format("host id '{}' is this agent's alone again", host_id_));
  }
}

void FleetService::publish(const LimitSet& rules, const std::array<uint64_t, kMaxRules>& caps, const LeaseReply& r,
                           uint64_t now_ns, uint64_t period_ns) {
  ShmFleet& f = seg_->seg().fleet;
  if (lapsed_) {  // back from an outage: what was used beyond the fallback is owed
    for (uint32_t i = 0; i < rules.count; ++i) {
      uint64_t fb = fallback_[i];  // the agent's own, not the segment's (a tenant's to rewrite)
      owed_[i] += fleet_lapse_excess(lapse_used_[i], fb ? fb : caps[i], now_ns - lapse_start_ns_);
      owed_start_[i] = owed_[i];
      lapse_used_[i] = 0;
    }
    lapsed_ = false;
  }
  LimitSet grant = rules;
  for (uint32_t i = 0; i < rules.count; ++i) {
    granted_[i] = r.granted[i];
    uint64_t g = fleet_grant_rate(r.granted[i], period_ns);
    rule_set_rate(grant.rules[i], g > caps[i] ? caps[i] : g);
  }
  expiry_ns_ = fleet_lease_expiry(now_ns, period_ns);
  live_ = r.live;
  for (uint32_t i = 0; i < rules.count; ++i) fallback_[i] = fleet_fallback_rate(caps[i], r.live, trusted_.fleet.expected_hosts);
  seg_->guarded([&] {
    // The expiry before the limits: a process that sees the new limits sees the new lease.
    f.lease_expiry_ns.store(expiry_ns_, std::memory_order_release);
    f.live_hosts.store(r.live, std::memory_order_relaxed);
    f.id_clash.store(r.clash ? 1 : 0, std::memory_order_relaxed);
    for (uint32_t i = 0; i < rules.count; ++i) {
      f.cap[i].store(caps[i], std::memory_order_relaxed);  // the library bounds its fallback by it
      f.fallback[i].store(fallback_[i], std::memory_order_relaxed);
      f.grant[i].store(r.granted[i], std::memory_order_relaxed);
      f.fleet_used[i].store(r.fleet_used[i], std::memory_order_relaxed);
      f.owed[i].store(owed_[i], std::memory_order_relaxed);
    }
    f.state.store(static_cast<uint32_t>(FleetState::Leased), std::memory_order_relaxed);
    f.renewals.fetch_add(1, std::memory_order_relaxed);
    f.last_grant_unix_ns.store(unix_now_ns(), std::memory_order_relaxed);
  });
  seg_->write_limits(grant);
  say("");
  status_.update(name(), redis_.node_status(), false, 0, now_ns);
}

void FleetService::on_failure(const std::string& why, uint64_t now_ns) {
  ShmFleet& f = seg_->seg().fleet;
  seg_->guarded([&] { f.failures.fetch_add(1, std::memory_order_relaxed); });
  say(fmt::format("no lease ({}); the host keeps its grant until the lease runs out, then the fallback", why));
  if (!lapsed_ && expiry_ns_ && now_ns >= expiry_ns_) {
    lapsed_ = true;
    lapse_start_ns_ = expiry_ns_;
    seg_->guarded([&] {
      f.lapses.fetch_add(1, std::memory_order_relaxed);
      f.state.store(static_cast<uint32_t>(FleetState::Fallback), std::memory_order_relaxed);
    });
  }
  status_.update(name(), redis_.node_status(), lapsed_, lapse_start_ns_, now_ns);
}

}  // namespace bonsai::ctl
