// SPDX-License-Identifier: MIT
// The fake-clock simulator the token_bucket tests share (token_bucket_test.cc,
// token_bucket_clock_test.cc): callers driving a bucket the way the library does (runtime/ticket_pay.h),
// in time order, with a perfect sleep. Test code only.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "bucket/token_bucket.h"

namespace bonsai::test {
inline constexpr uint64_t kSec = 1'000'000'000;
inline constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
inline constexpr uint64_t kDebtNs = 2'000'000;     // the library's default BONSAI_DEBT_NS
inline constexpr uint64_t kUptime = 1000 * kSec;   // fake CLOCK_MONOTONIC at the start

inline Rule rule_of(uint64_t rate, RateUnit unit = RateUnit::Bytes, uint64_t burst = 0) {
  Rule r{};
  r.calls = call_bit(CallId::write);
  r.rate = rate;
  r.burst = burst;
  r.unit = unit;
  r.fd_mask = kAnyFd;
  return r;
}

// One thread of an interposed program, as the library (runtime/ticket_pay.h) drives the bucket: a
// write is paid before it moves (it refills when its credit does not cover it), a
// read goes on any credit and a deficit it leaves is taken at once as a late charge;
// a refill takes what is missing plus a batch and sleeps until bucket_eligible says
// (a perfect sleep: the caller's clock jumps to the deadline, as one event), then
// rechecks (bucket_recheck) for reads charged late meanwhile, as ticket_wait_slow.
struct Caller {
  BucketState* bucket;
  const BucketParams* p;
  bool count_calls;  // a call-rate bucket: each call costs 1
  uint64_t slack;
  uint64_t now;
  bool reads = false;  // reads (charged after) instead of writes (paid before)
  int64_t credit = 0;
  uint64_t moved = 0, waits = 0, waited_ns = 0, bad_deadlines = 0;
  // A sleep in progress: the units taken, late_ns when they were, rechecks so far.
  bool asleep = false;
  uint64_t units = 0, late_seen = 0, sleep_from = 0;
  int rounds = 0;

  // One event: a call asking to move `want` units that takes `call_ns` of real time,
  // or, while asleep, the wake-up. @return true if it went to sleep.
  bool call(uint64_t want, uint64_t call_ns) {
    uint64_t n = count_calls ? 1 : std::min<uint64_t>(want, static_cast<uint64_t>(p->chunk));
    if (asleep) {  // woken at `now`: a recheck, then the call
      uint64_t d = rounds < 8 ? bucket_recheck(*bucket, *p, now, &late_seen, now, slack) : 0;
      ++rounds;
      if (d) {
        now = d;
        return true;
      }
      asleep = false;
      waited_ns += now - sleep_from;
      credit += static_cast<int64_t>(units);
    } else {
      uint64_t need = count_calls || reads ? 0 : n;
      if (credit <= 0 || static_cast<uint64_t>(credit) < need) {
        late_seen = bucket->late_ns.load();
        units = credit_refill_units(*p, credit, need);
        uint64_t tat = bucket_take(*bucket, *p, units, now);
        uint64_t deadline = bucket_eligible(*p, tat, now, slack);
        if (deadline) {
          if (deadline <= now || tat > deadline + p->depth_ns) ++bad_deadlines;
          asleep = true;
          sleep_from = now;
          rounds = 0;
          now = deadline;
          ++waits;
          return true;
        }
        credit += static_cast<int64_t>(units);
      }
    }
    moved += n;
    credit -= static_cast<int64_t>(n);
    if (credit_needs_settle(credit)) {  // only a read gets here
      uint64_t owed = static_cast<uint64_t>(-credit);
      credit = 0;
      bucket_take_late(*bucket, *p, owed, now);
    }
    now += call_ns;
    return false;
  }
};

struct RunResult {
  double rate_ratio;  // moved / (rate * elapsed)
  uint64_t waits, bad_deadlines, elapsed_ns;
};

// `threads` callers share one bucket for `seconds` of fake time; events run in time
// order (the caller whose clock is earliest goes next).
inline RunResult run_callers(const Rule& rule, unsigned threads, uint64_t want, uint64_t call_ns, uint64_t seconds,
                      uint64_t slack = kDebtNs, uint64_t start = kUptime) {
  BucketState b{};
  BucketParams p = bucket_params(rule);
  std::vector<Caller> cs(threads, Caller{&b, &p, rule.unit == RateUnit::Calls, slack, start});
  const uint64_t end = start + seconds * kSec;
  for (uint64_t i = 0; i < 100'000'000; ++i) {  // bound: far above any row's call count
    auto next = std::min_element(cs.begin(), cs.end(), [](auto& a, auto& c) { return a.now < c.now; });
    if (next->now >= end) break;
    next->call(want, call_ns);
  }
  RunResult r{0, 0, 0, end - start};
  uint64_t moved = 0;
  for (const Caller& c : cs) moved += c.moved, r.waits += c.waits, r.bad_deadlines += c.bad_deadlines;
  r.rate_ratio = static_cast<double>(moved) / (static_cast<double>(rule.rate) * static_cast<double>(seconds));
  return r;
}

// Units a fresh (idle) bucket lets through before the caller's first wait.
inline uint64_t burst_before_first_wait(const Rule& rule, BucketState& b, uint64_t now) {
  BucketParams p = bucket_params(rule);
  Caller c{&b, &p, rule.unit == RateUnit::Calls, 0, now};
  uint64_t want = std::max<uint64_t>(1, static_cast<uint64_t>(p.batch) / 2);
  for (int i = 0; i < 10'000'000; ++i) {
    uint64_t before = c.moved;
    if (c.call(want, 0)) return before;
  }
  return UINT64_MAX;
}


// `threads` callers (of any number of processes) making their first call at the same
// instant and then calls of `want` units back to back, as bench/scenarios/burst.sh does for real:
// the most they have moved beyond rate x elapsed at any instant, in ns of rate.
inline uint64_t worst_burst_ns(const Rule& rule, unsigned threads, uint64_t want, bool reads, uint64_t seconds) {
  BucketState b{};
  BucketParams p = bucket_params(rule);
  Caller proto{&b, &p, false, kDebtNs, kUptime};
  proto.reads = reads;
  std::vector<Caller> cs(threads, proto);
  const uint64_t end = kUptime + seconds * kSec;
  uint64_t total = 0, worst = 0;
  for (uint64_t i = 0; i < 100'000'000; ++i) {
    auto next = std::min_element(cs.begin(), cs.end(), [](auto& a, auto& c) { return a.now < c.now; });
    if (next->now >= end) break;
    uint64_t at = next->now, before = next->moved;
    next->call(want, 1'000);
    total += next->moved - before;
    auto allowed = static_cast<uint64_t>(static_cast<double>(rule.rate) * static_cast<double>(at - kUptime) / kSec);
    if (total > allowed && total - allowed > worst) worst = total - allowed;
  }
  return bucket_cost_ns(p, worst);
}

}  // namespace bonsai::test
