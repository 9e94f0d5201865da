// SPDX-License-Identifier: MIT
// The protect controller (`bonsaictl protect-agent`, docs/reference/protect.md): each period it
// reads a protected service's call durations (its segment's protect histogram, as a
// delta over the period), takes their p99 and moves each squeezed service's rates
// between their floors and their configured rates (bucket/protect_aimd.h), publishing
// them as `set` does (the buckets carry their state across a change); a severe
// overshoot between periods decides at once. Removed, replaced or damaged segments are
// noticed and given back. On exit the squeezed services get their configured rates
// back. One controller per protected service: the segment names its pid and start time
// (segment/protect_owner.h).
#include "protect/protect_agent.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <fmt/core.h>
#include <memory>
#include <thread>
#include <vector>
#include <unistd.h>

#include "abi/limit_parse.h"
#include "bucket/protect_aimd.h"
#include "segment/protect_owner.h"
#include "segment/shm_client.h"
#include "stat/stat_snapshot.h"
#include "sys/clock.h"

namespace bonsai::ctl {
namespace {

std::atomic<int> g_stop{0};
constexpr uint64_t kProtectByteStep = 128 * 4096;
constexpr uint64_t kLookNs = 1'000'000'000;  // removed or replaced segments are noticed within a second

struct Squeezed {
  std::string name;
  ServiceStat prev;               // the counters at the last period, for what each rule moved
  std::unique_ptr<Segment> seg;
  LimitSet configured{};          // the rates of FILE: the most the controller gives
  std::vector<ProtectRule> rules; // per rule: floor, rate, the controller's current rate and base
  LimitSet current{};             // what the controller last published
  bool broken = false;            // its segment is damaged: left alone (said once)
};

struct Protected {
  const ServiceConfig* cfg;
  std::unique_ptr<Segment> seg;
  std::vector<Squeezed> squeezed;
  // The histogram at the start of each of the last kWindow periods, oldest first, since
  // the last decrease: the p99 is taken over them all (~kWindow x 125 calls at 500/s
  // and 250 ms, where one period's p99 is its second slowest call), and a decrease
  // starts a new window (the calls it answered do not answer again). A mild overshoot
  // waits for ProtectTuning::decrease_samples calls or kWindow periods in it.
  static constexpr size_t kWindow = 4;
  static_assert(kWindow >= ProtectTuning{}.decrease_periods);
  std::deque<std::array<uint64_t, kProtectBuckets>> window;
  bool lost = false;  // its segment is damaged: no longer served, its squeezed given back (said once)
};

std::string rate_text(const Rule& r) {
  Rule one = r;
  one.burst = 0, one.ceil = 0, one.fd_mask = kAnyFd;
  char buf[256];
  rule_format(one, buf, sizeof buf);
  return buf;
}

void hist_read(Protected& p, uint64_t* out);
void window_start(Protected& p) {
  std::array<uint64_t, kProtectBuckets> h{};
  hist_read(p, h.data());
  p.window.assign(1, h);
}

void hist_read(Protected& p, uint64_t* out) {
  p.seg->guarded([&] {
    for (unsigned k = 0; k < kProtectBuckets; ++k) out[k] = p.seg->seg().protect.hist[k].load(std::memory_order_relaxed);
  });
}

// A squeezed service whose segment is damaged: its configured rates back if the
// segment still takes them, said once; the controller leaves it alone from then on.
void squeezed_broken(Squeezed& s, const std::string& what) {
  if (s.broken) return;
  s.broken = true;
  std::string restored = "its configured rates are back";
  try {
    s.seg->write_limits(s.configured);
    s.current = s.configured;
  } catch (const CtlError& e) {
    restored = fmt::format("its rates could not be restored ({}): bonsaictl rm --force {}, then load", e.what(), s.name);
  }
  fmt::print(stderr, "protect-agent: {}: {}; no longer squeezed, {}\n", s.name, what, restored);
  std::fflush(stderr);
}

// Publishes `next` to the squeezed service when a rate moved; says what moved.
void publish(Squeezed& s, const LimitSet& next, const char* why) {
  if (s.broken) return;
  bool moved = false;
  for (uint32_t r = 0; r < next.count; ++r) moved = moved || next.rules[r].rate != s.current.rules[r].rate;
  if (!moved) return;
  std::string what;
  for (uint32_t r = 0; r < next.count; ++r)
    if (next.rules[r].rate != s.current.rules[r].rate)
      what += fmt::format("{}{}", what.empty() ? "" : ", ", rate_text(next.rules[r]));
  try {
    s.seg->write_limits(next);
  } catch (const CtlError& e) {
    squeezed_broken(s, e.what());
    return;
  }
  s.current = next;
  fmt::print("protect-agent: {} {}: {}\n", why, s.name, what);
  std::fflush(stdout);
}

// A protected service whose segment is damaged: its durations can no longer be read,
// so nothing may stay squeezed for it: its squeezed get their configured rates back
// (what can be restored), said once; the controller no longer serves it.
void protected_lost(Protected& p, const std::string& what) {
  if (p.lost) return;
  p.lost = true;
  fmt::print(stderr, "protect-agent: {}: {}; no longer served, its squeezed services get their configured rates back\n",
             p.cfg->name, what);
  std::fflush(stderr);
  for (Squeezed& s : p.squeezed) publish(s, s.configured, "damaged protected service: configured rates for");
}

// Segments removed (`bonsaictl rm`, a test's cleanup) or replaced (a new `load`) since
// the agent opened them: a removed protected service is no longer served, a removed
// squeezed one no longer squeezed (its rates went with it). Without this an agent whose
// services were all removed ran on for good, reading segments nobody uses.
void notice_removed(std::vector<Protected>& all) {
  auto gone = [](const Segment& seg) -> const char* {
    FileState st = seg.file_state();
    return st == FileState::Removed ? "its segment was removed" : st == FileState::Replaced ? "its segment was replaced" : nullptr;
  };
  for (Protected& p : all) {
    if (p.lost) continue;
    if (const char* why = gone(*p.seg)) {
      protected_lost(p, why);
      continue;
    }
    for (Squeezed& s : p.squeezed)
      if (!s.broken)
        if (const char* why = gone(*s.seg)) {
          s.broken = true;
          fmt::print(stderr, "protect-agent: {}: {}; no longer squeezed\n", s.name, why);
          std::fflush(stderr);
        }
  }
}

// One decision (`fast`: a check between decisions, which decides only on a severe
// overshoot of the calls since the last decision; returns whether it decided).
bool step(Protected& p, bool fast) {
  const ProtectTuning tune{};
  if (p.lost) return false;
  std::array<uint64_t, kProtectBuckets> now{};
  try {
    p.seg->check();  // the header and tables, as stat checks them
    hist_read(p, now.data());
  } catch (const CtlError& e) {
    protected_lost(p, e.what());
    return false;
  }
  uint64_t samples = 0, period_samples = 0;
  uint64_t p99 = 0;
  ProtectDecision d;
  if (fast) {
    uint64_t q = protect_quantile(p.window.back().data(), now.data(), tune.fast_quantile, samples);
    if (!protect_fast(q, samples, p.cfg->protect.p99_ns, tune)) return false;
    p99 = protect_quantile(p.window.back().data(), now.data(), 0.99, samples);
    d = ProtectDecision::Decrease;
  } else {
    p99 = protect_quantile(p.window.front().data(), now.data(), 0.99, samples);
    (void)protect_quantile(p.window.back().data(), now.data(), 0.99, period_samples);
    d = protect_decide(p99, samples, p.cfg->protect.p99_ns, tune, static_cast<uint32_t>(p.window.size()));
    // Idle is judged on this period alone: the rate comes back as soon as the protected stop.
    if (period_samples == 0) d = ProtectDecision::Idle;
  }
  if (d == ProtectDecision::Decrease || d == ProtectDecision::Idle) p.window.clear();
  p.window.push_back(now);
  while (p.window.size() > Protected::kWindow) p.window.pop_front();
  for (Squeezed& s : p.squeezed) {
    if (s.broken) continue;
    LimitSet next = s.current;
    ServiceStat now_stat;
    try {
      now_stat = stat_snapshot(*s.seg);
    } catch (const CtlError& e) {  // a damaged segment: given back once, then left alone
      squeezed_broken(s, e.what());
      continue;
    }
    double secs = static_cast<double>(now_stat.mono_ns - s.prev.mono_ns) / 1e9;
    for (uint32_t r = 0; r < next.count; ++r) {
      ProtectRule& pr = s.rules[r];
      double moved = 0;  // what the rule moved over the period, in its unit
      for (size_t c = 0; c < kCallCount; ++c)
        if (next.rules[r].calls & call_bit(static_cast<CallId>(c))) {
          bool per_call = next.rules[r].unit == RateUnit::Calls;
          uint64_t a = per_call ? s.prev.total[c].calls : s.prev.total[c].bytes;
          uint64_t b = per_call ? now_stat.total[c].calls : now_stat.total[c].bytes;
          moved += b > a ? static_cast<double>(b - a) : 0;
        }
      uint64_t used = secs > 0.01 ? static_cast<uint64_t>(moved / secs) : 0;
      uint64_t v = protect_step(pr, d, p99, p.cfg->protect.p99_ns, used);
      // A byte rate between floor and rate in whole 512 KiB/s: the library cuts reads
      // larger than rate/128 into pieces of that size (token_bucket.h), and an O_DIRECT
      // read cut at anything but whole 4 KiB pages fails with EINVAL. Rounded in the
      // direction of the step (a small increase still moves), within [floor, rate].
      if (next.rules[r].unit == RateUnit::Bytes && v != pr.rate && v != pr.floor && v > kProtectByteStep) {
        uint64_t down = v / kProtectByteStep * kProtectByteStep;
        v = d == ProtectDecision::Decrease || down == v ? down : down + kProtectByteStep;
        v = std::clamp(v, pr.floor, pr.rate);
        pr.current = v;
      }
      // At the top of its range the rule is what was configured, a fraction (2.5/s) included.
      uint32_t less = v >= pr.rate && r < s.configured.count ? s.configured.rules[r].rate_less_micro : 0;
      rule_set_rate(next.rules[r], v);
      next.rules[r].rate_less_micro = less;
    }
    s.prev = std::move(now_stat);
    publish(s, next, fmt::format("{} p99 {} us ({} calls, target {} us): {}", p.cfg->name, p99 / 1000, samples,
                                 p.cfg->protect.p99_ns / 1000, protect_decision_name(static_cast<uint32_t>(d)))
                         .c_str());
  }
  try {
    p.seg->guarded([&] {
      ShmProtect& sp = p.seg->seg().protect;
      sp.p99_ns.store(samples ? p99 : 0, std::memory_order_relaxed);
      sp.samples.store(samples, std::memory_order_relaxed);
      sp.decision.store(static_cast<uint32_t>(d), std::memory_order_relaxed);
      sp.decided_unix_ns.store(unix_now_ns(), std::memory_order_relaxed);
      sp.periods.fetch_add(1, std::memory_order_relaxed);
    });
  } catch (const CtlError& e) {
    protected_lost(p, e.what());
  }
  return true;
}

}  // namespace

int protect_agent_run(const Config& cfg, const std::string& file, const ProtectAgentOptions& opt) {
  const uint32_t period_ms = opt.period_ms;
  const uint64_t for_s = opt.for_s;
  std::vector<Protected> all;
  for (const auto& s : cfg.services) {
    if (!s.protect.present) continue;
    Protected p;
    p.cfg = &s;
    p.seg = Segment::open(s.name, false);
    // One controller per protected service: another live one (its pid in the segment) keeps it.
    // A pid alone may have been reused since that agent died: its start time must match.
    uint32_t other = 0;
    uint64_t other_start = 0;
    p.seg->guarded([&] {
      other = p.seg->seg().protect.controller_pid.load(std::memory_order_relaxed);
      other_start = p.seg->seg().protect.controller_start.load(std::memory_order_relaxed);
    });
    if (other && static_cast<pid_t>(other) != getpid() && protect_agent_alive(other, other_start))
      runtime_error(fmt::format("service '{}' is already served by protect-agent pid {}", s.name, other));
    for (const auto& name : s.protect.squeeze) {
      const ServiceConfig* q = cfg.find(name);
      Squeezed sq;
      sq.name = name;
      sq.seg = Segment::open(name, false);
      sq.configured = q->limits;
      for (uint32_t r = 0; r < q->limits.count; ++r) {
        const Rule& rule = q->limits.rules[r];
        // A byte floor is published in whole 512 KiB/s too, rounded up (the least it may
        // be left): 5MB/s is a chunk of 39062.5 bytes, and a cut O_DIRECT read fails.
        uint64_t floor = std::min(q->rule_floors[r], rule.rate);
        if (rule.unit == RateUnit::Bytes && floor > kProtectByteStep && floor % kProtectByteStep)
          floor = std::min(rule.rate, (floor / kProtectByteStep + 1) * kProtectByteStep);
        sq.rules.push_back(ProtectRule{rule.rate, floor, rule.rate, 0});
      }
      sq.current = q->limits;
      sq.prev = stat_snapshot(*sq.seg);
      sq.seg->write_limits(q->limits);  // the configured rates, whatever a previous agent left
      p.squeezed.push_back(std::move(sq));
    }
    p.seg->guarded([&] {
      ShmProtect& sp = p.seg->seg().protect;
      sp.target_ns.store(s.protect.p99_ns, std::memory_order_relaxed);
      sp.controller_start.store(proc_start_ticks(getpid()), std::memory_order_relaxed);
      sp.controller_pid.store(static_cast<uint32_t>(getpid()), std::memory_order_relaxed);
      sp.calls.store(s.protect.calls, std::memory_order_relaxed);
    });
    p.seg->write_limits(s.limits);  // a new sequence: running processes re-read the protect calls
    window_start(p);
    all.push_back(std::move(p));
  }
  if (all.empty()) usage_error(fmt::format("{}: no service has 'protect:'", file));
  std::signal(SIGINT, [](int) { g_stop.store(1); });
  std::signal(SIGTERM, [](int) { g_stop.store(1); });
  fmt::print("protect-agent: {} protected service{}, a decision every {} ms\n", all.size(), all.size() == 1 ? "" : "s",
             period_ms);
  std::fflush(stdout);
  // A decision per period, and ProtectTuning::fast_checks - 1 checks between them for a
  // severe overshoot (a decision then starts a new period for that service).
  const uint64_t period_ns = uint64_t{period_ms} * 1'000'000, check_ns = period_ns / ProtectTuning{}.fast_checks;
  uint64_t start = mono_ns(), next_check = start + check_ns;
  std::vector<uint64_t> next(all.size(), start + period_ns);
  uint64_t next_look = start + kLookNs;
  while (!g_stop.load()) {
    uint64_t now = mono_ns();
    if (for_s && now - start >= for_s * 1'000'000'000) break;
    if (now >= next_look) {
      next_look = now + kLookNs;
      notice_removed(all);
    }
    if (now < next_check) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(next_check - now, 50'000'000)));
      continue;
    }
    next_check += check_ns;
    if (next_check < now) next_check = now + check_ns;  // fell behind: no burst of checks
    bool served = false;
    for (size_t i = 0; i < all.size(); ++i) {
      bool period_end = now + check_ns / 2 >= next[i];
      if (step(all[i], !period_end)) next[i] = (period_end && next[i] + period_ns > now ? next[i] : now) + period_ns;
      served = served || !all[i].lost;
    }
    if (!served) {
      fmt::print(stderr, "protect-agent: no protected service left to serve\n");
      return kExitRuntime;
    }
  }
  // Work conserving to the end: nobody squeezes them once the controller is gone.
  for (auto& p : all) {
    for (auto& s : p.squeezed) publish(s, s.configured, "exit: configured rates for");
    if (p.lost) continue;
    try {
      p.seg->guarded([&] { p.seg->seg().protect.controller_pid.store(0, std::memory_order_relaxed); });
    } catch (const CtlError& e) {
      protected_lost(p, e.what());
    }
  }
  return kExitOk;
}

}  // namespace bonsai::ctl
