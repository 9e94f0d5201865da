// SPDX-License-Identifier: MIT
// The protect controller's arithmetic (issue 52): histogram buckets, the p99 of a
// period from two snapshots, and AIMD driven by a deterministic fake latency source
// (a disk whose p99 grows with the squeezed neighbour's rate): it converges under the
// target, does not oscillate wider than one halving, and gives the rate back when idle.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bucket/protect_aimd.h"

using namespace bonsai;

TEST_CASE("protect_hist: buckets are log-linear, 4 per octave, each lo within its bucket") {
  CHECK(protect_bucket(0) == 0);
  CHECK(protect_bucket(1023) == 0);
  CHECK(protect_bucket(1024) == 1);
  CHECK(protect_bucket(1280) == 2);
  CHECK(protect_bucket(2048) == 5);
  for (unsigned k = 1; k + 1 < kProtectBuckets; ++k) {
    CHECK(protect_bucket(protect_bucket_lo_ns(k)) == k);
    CHECK(protect_bucket(protect_bucket_lo_ns(k + 1) - 1) == k);
    // each bucket at most 25% of its low bound wide
    CHECK(protect_bucket_lo_ns(k + 1) - protect_bucket_lo_ns(k) <= protect_bucket_lo_ns(k) / 4);
  }
  CHECK(protect_bucket(UINT64_MAX) == kProtectBuckets - 1);
}

TEST_CASE("protect_quantile: the p99 of the calls between two snapshots") {
  std::vector<uint64_t> a(kProtectBuckets, 0), b(kProtectBuckets, 0);
  uint64_t n = 0;
  CHECK(protect_quantile(a.data(), b.data(), 0.99, n) == 0);
  CHECK(n == 0);
  a[protect_bucket(100'000)] = 1000;  // before: old calls do not count
  b = a;
  b[protect_bucket(200'000)] += 980;   // 98% at ~200 us
  b[protect_bucket(3'000'000)] += 20;  // 2% at ~3 ms
  uint64_t p99 = protect_quantile(a.data(), b.data(), 0.99, n);
  CHECK(n == 1000);
  CHECK(p99 >= protect_bucket_lo_ns(protect_bucket(3'000'000)));
  CHECK(p99 < protect_bucket_lo_ns(protect_bucket(3'000'000) + 1));
  uint64_t p50 = protect_quantile(a.data(), b.data(), 0.5, n);
  CHECK(p50 >= 160'000);
  CHECK(p50 <= 240'000);
  b[0] = 0;  // a counter gone backwards counts nothing
  protect_quantile(a.data(), b.data(), 0.99, n);
  CHECK(n == 1000);
}

TEST_CASE("protect_aimd: decisions") {
  CHECK(protect_decide(5'000'000, 300, 2'500'000) == ProtectDecision::Decrease);
  CHECK(protect_decide(2'400'000, 100, 2'500'000) == ProtectDecision::Hold);
  CHECK(protect_decide(1'000'000, 100, 2'500'000) == ProtectDecision::Increase);
  CHECK(protect_decide(9'000'000, 3, 2'500'000) == ProtectDecision::Hold);  // too few calls to judge, slow ones
  CHECK(protect_decide(1'000'000, 3, 2'500'000) == ProtectDecision::Idle);
  CHECK(protect_decide(0, 0, 2'500'000) == ProtectDecision::Idle);
  // A mild overshoot on one period's 125 calls waits for more; 200 calls or 4 periods act.
  CHECK(protect_decide(2'700'000, 125, 2'500'000, {}, 1) == ProtectDecision::Wait);
  CHECK(protect_decide(2'700'000, 250, 2'500'000, {}, 2) == ProtectDecision::Decrease);
  CHECK(protect_decide(2'700'000, 60, 2'500'000, {}, 4) == ProtectDecision::Decrease);  // a slow caller
  // A severe one (above 1.5 x the target) acts at once.
  CHECK(protect_decide(3'800'000, 125, 2'500'000, {}, 1) == ProtectDecision::Decrease);
  // Between decisions (the agent checks every fifth of a period): the p90 of the calls
  // since the last decision above the target (10% of them slow) with at least 20 calls.
  CHECK(protect_fast(2'600'000, 25, 2'500'000));
  CHECK_FALSE(protect_fast(2'400'000, 25, 2'500'000));
  CHECK_FALSE(protect_fast(9'000'000, 10, 2'500'000));
  CHECK(std::string(protect_decision_name(2)) == "increase");
  CHECK(std::string(protect_decision_name(5)) == "wait");
  CHECK(std::string(protect_decision_name(99)) == "none");
}

TEST_CASE("protect_aimd: a decrease is proportional to the overshoot, at most half") {
  CHECK(protect_decrease_factor(2'000'000, 2'500'000) == 1.0);
  CHECK(protect_decrease_factor(2'600'000, 2'500'000) == Approx(1 - 0.8 * 0.1 / 2.6));  // ~0.97
  CHECK(protect_decrease_factor(5'000'000, 2'500'000) == Approx(0.6));
  CHECK(protect_decrease_factor(50'000'000, 2'500'000) == Approx(0.5));  // never more than half
  ProtectRule r{1000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 50'000'000, 2'500'000) == 500);
  CHECK(r.base == 1000);
  r = {1000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 50'000'000, 2'500'000, 300) == 150);  // halves what it used
  CHECK(r.base == 300);
  r = {200, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 50'000'000, 2'500'000, 300) == 100);  // or its cap, the lesser
  r = {1000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 2'600'000, 2'500'000) == 969);  // a hair over: 3% off
  r = {1000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 2'500'001, 2'500'000) == 999);  // any decrease moves
  r = {15, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Decrease, 50'000'000, 2'500'000) == 10);  // down to the floor
}

TEST_CASE("protect_aimd: increase is scaled to the operating point, idle doubles, all within [floor, rate]") {
  ProtectRule r{1000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000, 300) == 1000);  // used only on a decrease
  r = {500, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == 520);  // + 4% of the current rate
  r = {100, 10, 1000, 200};
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == 108);  // + 4% of the last decrease's base
  // A 4 GB/s rule on a disk that leaves 200 MB/s: 8 MB/s a period, not 1% of the 4 GB/s (40 MB/s).
  r = {150'000'000, 5'000'000, 4'000'000'000, 200'000'000};
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == 158'000'000);
  // After 4 increases in a row (a second well within the target) the step triples.
  r = {500, 10, 1000, 0};
  for (int i = 0; i < 4; ++i) protect_step(r, ProtectDecision::Increase, 0, 2'500'000);
  CHECK(r.ups == 4);
  uint64_t before = r.current;
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == before + 3 * (before * 4 / 100));
  protect_step(r, ProtectDecision::Hold, 0, 2'500'000);  // anything else starts the count again
  CHECK(r.ups == 0);
  before = r.current;
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == before + before * 4 / 100);
  r = {100, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Idle, 0, 2'500'000) == 200 + 9);
  r = {995, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Increase, 0, 2'500'000) == 1000);
  r = {500, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Hold, 0, 2'500'000) == 500);
  CHECK(protect_step(r, ProtectDecision::Wait, 9'000'000, 2'500'000) == 500);
  r = {5000, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Hold, 0, 2'500'000) == 1000);  // clamped into [floor, rate]
  r = {1, 10, 1000, 0};
  CHECK(protect_step(r, ProtectDecision::Hold, 0, 2'500'000) == 10);
}

namespace {
// A's p99 = 1.2 ms alone + 6 ms x (B's rate / 700 MB/s): 5.7 ms unmanaged, as measured in
// issue 52 by hand. Target 2.5 ms: B must stay under ~151 MB/s.
uint64_t fake_p99(uint64_t b) { return 1'200'000 + static_cast<uint64_t>(6e6 * static_cast<double>(b) / 7e8); }
}  // namespace

TEST_CASE("protect_aimd: against a fake disk it converges under the target and recovers when idle") {
  const uint64_t rate = 700'000'000, floor = 5'000'000, target = 2'500'000;
  ProtectRule r{rate, floor, rate, 0};
  int violations_late = 0;
  uint64_t lo = rate, hi = 0;
  for (int period = 0; period < 200; ++period) {
    uint64_t p99 = fake_p99(r.current);
    if (period >= 20 && p99 > target) ++violations_late;
    if (period >= 100) lo = std::min(lo, r.current), hi = std::max(hi, r.current);
    protect_step(r, protect_decide(p99, 300, target), p99, target);
  }
  CHECK(violations_late <= 200 / 10);  // a probe over the target now and then, not every period
  CHECK(hi <= 156'000'000);            // never much above what keeps the target (the overshoot is ~3%)
  CHECK(lo >= 100'000'000);            // a decrease from just over takes a few percent, not half
  // A stops: B gets its whole rate back within 10 periods, even from its floor.
  r.current = floor;
  int periods = 0;
  while (r.current < rate && periods < 100) protect_step(r, protect_decide(0, 0, target), 0, target), ++periods;
  CHECK(periods <= 10);
}

TEST_CASE("protect_aimd: with a noisy p99 (125 calls a period) B keeps more than under plain halving") {
  // Each call's latency is log-normal (sigma 0.6) with the fake disk's p99 at B's rate;
  // each period 125 calls, the controller's window as in the agent (the calls since the
  // last decrease, up to 4 periods). Plain AIMD (halve on any p99 above the target, +1%
  // of the configured span, no check between decisions: the first controller) against
  // the law of protect_aimd.h with the agent's fast check, same seeds. B starts at the
  // disk's 900 MB/s, as A starts beside it in bench/protect.sh.
  const uint64_t rate = 4'000'000'000, floor = 5'000'000, target = 2'500'000;
  ProtectTuning halving;
  halving.beta = 100, halving.severe = 0, halving.increase = 0, halving.decrease_samples = 0;
  // `fast`: the agent's severe check between decisions (every fifth of a period, on the
  // calls since the last decision).
  auto run = [&](const ProtectTuning& t, bool span_step, bool fast, uint32_t seed, double& p99_all) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> z(0.0, 0.6);
    ProtectRule r{rate, floor, rate, 0};
    std::vector<uint64_t> all, window, fresh;  // window: since the last decrease, in order
    uint32_t periods = 0;
    double b_sum = 0;
    auto q_of = [](std::vector<uint64_t> v, unsigned pct) {
      std::sort(v.begin(), v.end());
      return v[v.size() * pct / 100];
    };
    auto p99_of = [&](const std::vector<uint64_t>& v) { return q_of(v, 99); };
    for (int tick = 0; tick < 48 * 5; ++tick) {
      uint64_t b = std::min<uint64_t>(r.current, 900'000'000);  // the disk gives B at most 900 MB/s
      double p99 = static_cast<double>(fake_p99(b));
      for (int c = 0; c < 25; ++c) {
        auto ns = static_cast<uint64_t>(p99 / std::exp(2.326 * 0.6) * std::exp(z(rng)));
        all.push_back(ns), window.push_back(ns), fresh.push_back(ns);
      }
      if (tick >= 20) b_sum += static_cast<double>(b);
      if (tick % 5 != 4) {
        if (!fast || fresh.size() < t.min_samples) continue;
        uint64_t q = p99_of(fresh);
        if (!protect_fast(q_of(fresh, 90), fresh.size(), target, t)) continue;
        protect_step(r, ProtectDecision::Decrease, q, target, b, t);
        window.clear(), fresh.clear(), periods = 0;
        continue;
      }
      fresh.clear();
      ++periods;
      uint64_t q = p99_of(window);
      ProtectDecision d = protect_decide(q, window.size(), target, t, periods);
      if (span_step && d == ProtectDecision::Increase)
        r.current = std::min(rate, r.current + (rate - floor) / 100);
      else
        protect_step(r, d, q, target, b, t);
      if (d == ProtectDecision::Decrease) window.clear(), periods = 0;
      if (periods >= 4) window.erase(window.begin(), window.begin() + 125), --periods;
    }
    p99_all = static_cast<double>(p99_of(all));
    return b_sum / (48 * 5 - 20);
  };
  double b_old = 0, b_new = 0, p_old = 0, p_new = 0, worst_new = 0;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    double p = 0;
    b_old += run(halving, true, false, seed, p) / 10;
    p_old += p / 10;
    b_new += run(ProtectTuning{}, false, true, seed, p) / 10;
    p_new += p / 10;
    worst_new = std::max(worst_new, p);
  }
  // Measured: B 129 -> 140 MB/s on average, A's p99 over the run 3.1 -> 2.6 ms.
  CHECK(b_new > b_old * 1.05);
  CHECK(p_new < p_old);
  CHECK(worst_new <= 3'000'000);  // the bar, over the whole run
}
