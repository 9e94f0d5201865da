// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/bucket/token_bucket against a fake clock (token_bucket_sim.h):
// long-run rates from 1 B/s to 1 GiB/s through the prepaid-credit helpers, days of
// simulated time, bursts after idle, carried debt, depths, cost saturation, chunks,
// credit, late charges and threads. The clock cases: token_bucket_clock_test.cc.
#include <catch2/catch.hpp>

#include <thread>
#include <vector>

#include "abi/limit_parse.h"  // kMaxRate
#include "bucket/token_bucket.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::test;

TEST_CASE("token_bucket: the long-run rate is exact", "[token_bucket]") {
  struct Row {
    const char* what;
    Rule rule;
    unsigned threads;
    uint64_t want, call_ns, seconds;
  };
  const Row rows[] = {
      {"64 KiB/s, 1500 B calls", rule_of(64 * KiB), 1, 1500, 20'000, 600},
      {"1 MiB/s, 4 KiB calls", rule_of(MiB), 1, 4096, 2'000, 300},
      {"100 MiB/s, 256 KiB calls", rule_of(100 * MiB), 1, 256 * KiB, 30'000, 120},
      {"1 GiB/s, 4 MiB calls", rule_of(GiB), 1, 4 * MiB, 100'000, 120},
      {"1 GiB/s, 64 MiB calls cut to chunks", rule_of(GiB), 1, 64 * MiB, 100'000, 60},
      {"10 MiB/s, 4 threads, 4 KiB calls", rule_of(10 * MiB), 4, 4096, 2'000, 60},
      {"7777777 B/s (inexact ns per byte)", rule_of(7'777'777), 2, 65536, 5'000, 120},
      {"1 B/s, 1 B calls", rule_of(1), 1, 1, 1'000, 100'000},
      {"1 B/s, 100 B calls (debt)", rule_of(1), 1, 100, 1'000, 1'000'000},
      {"3 B/s, 1 B calls", rule_of(3), 1, 1, 1'000, 100'000},
      {"1 call/s", rule_of(1, RateUnit::Calls), 1, 1, 1'000, 100'000},
      {"200 calls/s, 2 threads", rule_of(200, RateUnit::Calls), 2, 1, 10'000, 600},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    RunResult res = run_callers(r.rule, r.threads, r.want, r.call_ns, r.seconds);
    CHECK(res.rate_ratio == Approx(1.0).margin(0.001));
    CHECK(res.bad_deadlines == 0);
    // A throttled caller sleeps in few long waits: each is longer than the slack.
    CHECK(res.waits <= r.threads * (res.elapsed_ns / kDebtNs + 1));
  }
}

TEST_CASE("token_bucket: the rate is exact without carried debt", "[token_bucket]") {
  for (uint64_t rate : {64 * KiB, MiB, 100 * MiB}) {
    INFO("rate " << rate);
    RunResult res = run_callers(rule_of(rate), 1, 1000, 1'000, 60, 0);
    CHECK(res.rate_ratio == Approx(1.0).margin(0.001));
    CHECK(res.bad_deadlines == 0);
  }
}

TEST_CASE("token_bucket: 1 GiB/s held for days without overflow", "[token_bucket]") {
  SECTION("a week in one-minute takes, starting at 400 days of uptime") {
    BucketState b{};
    BucketParams p = bucket_params(rule_of(GiB));
    const uint64_t start = 400ull * 86400 * kSec, step = 60 * GiB;
    uint64_t now = start, moved = 0, prev_tat = 0, bad = 0;
    for (int i = 0; i < 7 * 24 * 60; ++i) {
      uint64_t tat = bucket_take(b, p, step, now);
      if (tat < prev_tat || tat > now + 61 * kSec) ++bad;  // never wraps or runs away
      prev_tat = tat;
      if (uint64_t d = bucket_eligible(p, tat, now, 0)) now = d;
      moved += step;
    }
    CHECK(bad == 0);
    double elapsed_s = static_cast<double>(now - start) / kSec;
    CHECK(elapsed_s == Approx(7.0 * 86400).epsilon(1e-6));
    CHECK(static_cast<double>(moved) / elapsed_s == Approx(static_cast<double>(GiB)).epsilon(1e-6));
  }
  SECTION("credit-driven callers at 1, 100 and 200 years of uptime") {
    for (uint64_t years : {1ull, 100ull, 200ull}) {
      INFO(years << " years");
      RunResult res = run_callers(rule_of(GiB), 2, 4 * MiB, 50'000, 60, kDebtNs, years * 365 * 86400 * kSec);
      CHECK(res.rate_ratio == Approx(1.0).margin(0.001));
      CHECK(res.bad_deadlines == 0);
    }
  }
}

// A caller's first wait comes within a batch of the depth (batches are taken whole).
// Regression: when bucket_take let tat lag `now` by the depth (floor = now - depth)
// while bucket_eligible let the caller go `depth` ahead of tat, an idle bucket let
// about 2 x depth through before the first wait (burst=256KiB passed 520000 B).
TEST_CASE("token_bucket: a burst after idle is bounded by depth + batch", "[token_bucket]") {
  const Rule rules[] = {rule_of(MiB), rule_of(100 * MiB), rule_of(8'000'000, RateUnit::Bytes, 256 * KiB),
                        rule_of(200, RateUnit::Calls, 50), rule_of(1)};
  for (const Rule& r : rules) {
    BucketParams p = bucket_params(r);
    uint64_t depth_units = r.burst ? r.burst : std::max<uint64_t>(1, r.rate / 100);
    INFO("rate " << r.rate << " depth " << depth_units << " batch " << p.batch);
    BucketState b{};
    uint64_t burst = burst_before_first_wait(r, b, kUptime);
    CHECK(burst <= depth_units + static_cast<uint64_t>(p.batch));
    // Idle again for a minute after the first burst: the same bound.
    uint64_t again = burst_before_first_wait(r, b, kUptime + 60 * kSec);
    CHECK(again <= depth_units + static_cast<uint64_t>(p.batch));
  }
}

TEST_CASE("token_bucket: an idle bucket allows a burst of its depth", "[token_bucket]") {
  const Rule rules[] = {rule_of(MiB), rule_of(GiB), rule_of(8'000'000, RateUnit::Bytes, 256 * KiB),
                        rule_of(200, RateUnit::Calls, 50)};
  for (const Rule& r : rules) {
    uint64_t depth_units = r.burst ? r.burst : r.rate / 100;
    BucketParams p = bucket_params(r);
    INFO("rate " << r.rate);
    BucketState b{};
    // Batches are taken whole and a write takes what it needs with one: the last take
    // that fits may leave up to a batch and a call unused.
    uint64_t call = std::max<uint64_t>(1, static_cast<uint64_t>(p.batch) / 2);
    CHECK(burst_before_first_wait(r, b, kUptime) + static_cast<uint64_t>(p.batch) + call >= depth_units);
  }
}

TEST_CASE("token_bucket: a take within the depth goes, beyond it waits until tat - depth + slack", "[token_bucket]") {
  BucketParams p = bucket_params(rule_of(1'000'000'000));  // 1 ns per byte: costs are exact
  REQUIRE(p.depth_ns == 10'000'000);
  const uint64_t now = kUptime, slack = kDebtNs;
  for (uint64_t debt : {uint64_t{0}, uint64_t{1}, slack - 1, slack, slack + 1, 10 * slack, 60 * kSec}) {
    INFO("debt " << debt << " ns");  // how far past the depth the take leaves tat
    BucketState b{};
    b.tat_ns.store(now + p.depth_ns);  // a full bucket: the next unit is due now
    uint64_t tat = bucket_take(b, p, debt, now);
    CHECK(tat == now + p.depth_ns + debt);
    // The slack is inside the depth: no take goes further than the depth ahead of now,
    // and a sleeper wakes `slack` late so that the takes after it find room.
    CHECK(bucket_eligible(p, tat, now, slack) == (debt ? tat - p.depth_ns + slack : 0));
  }
  SECTION("eligibility edge cases") {
    CHECK(bucket_eligible(p, 0, 0, 0) == 0);                   // tat below depth: no underflow
    CHECK(bucket_eligible(p, p.depth_ns - 1, 0, 0) == 0);
    CHECK(bucket_eligible(p, p.depth_ns + 1, 0, 0) == 1);
    CHECK(bucket_eligible(p, UINT64_MAX, 0, slack) == UINT64_MAX - p.depth_ns + slack);
    CHECK(bucket_eligible(p, now + p.depth_ns + 5, now, 0) == now + 5);
    // A slack above half the depth is cut to half the depth.
    CHECK(bucket_eligible(p, now + p.depth_ns + 5, now, 60 * kSec) == now + 5 + p.depth_ns / 2);
  }
  SECTION("an idle bucket forgets old debt beyond its depth") {
    BucketState b{};
    b.tat_ns.store(now - 5 * kSec);
    CHECK(bucket_take(b, p, 1000, now) == now + 1000);  // tat = max(tat, now) + cost
  }
}

TEST_CASE("token_bucket: default depth is 10 ms of rate, batch 1 ms", "[token_bucket]") {
  const uint64_t rates[] = {1000, 64 * KiB, MiB, 7'777'777, 100 * MiB, 1'000'000'000, GiB, kMaxRate};
  for (uint64_t rate : rates) {
    INFO("rate " << rate);
    BucketParams p = bucket_params(rule_of(rate));
    uint64_t unit_ns = bucket_cost_ns(p, 1) + 1;
    CHECK(p.depth_ns <= kDefaultDepthNs);
    CHECK(p.depth_ns + unit_ns >= kDefaultDepthNs);
    CHECK(static_cast<uint64_t>(p.batch) == rate / 1000);
    CHECK(bucket_cost_ns(p, static_cast<uint64_t>(p.batch)) <= kBatchNs);
  }
  SECTION("tiny rates: at least one unit") {
    struct Row {
      uint64_t rate;
      uint64_t depth_ns;
    };
    for (Row r : {Row{1, kSec}, Row{4, kSec / 4}, Row{50, kSec / 50}, Row{100, kSec / 100}}) {
      INFO("rate " << r.rate);
      BucketParams p = bucket_params(rule_of(r.rate));
      CHECK(p.depth_ns == r.depth_ns);
      CHECK(p.batch == 1);
    }
  }
  SECTION("rate 0 is treated as 1") {
    BucketParams zero = bucket_params(rule_of(0)), one = bucket_params(rule_of(1));
    CHECK(zero.ns_per_unit_q32 == one.ns_per_unit_q32);
    CHECK(zero.depth_ns == one.depth_ns);
  }
}

TEST_CASE("token_bucket: a custom burst sets the depth", "[token_bucket]") {
  struct Row {
    Rule rule;
    uint64_t depth_ns;
  };
  const Row rows[] = {
      {rule_of(8'000'000, RateUnit::Bytes, 256 * KiB), 32'768'000},  // 256 KiB at 8 MB/s
      {rule_of(MiB, RateUnit::Bytes, MiB), kSec},                     // the paper's b = r x 1 s
      {rule_of(200, RateUnit::Calls, 50), 250'000'000},
      {rule_of(1, RateUnit::Bytes, 1), kSec},
  };
  for (const Row& r : rows) {
    INFO("rate " << r.rule.rate << " burst " << r.rule.burst);
    BucketParams p = bucket_params(r.rule);
    CHECK(p.depth_ns == r.depth_ns);
    CHECK(p.depth_ns == bucket_cost_ns(p, r.rule.burst));
  }
}

TEST_CASE("token_bucket: bucket_cost_ns is exact and saturates at 2^62", "[token_bucket]") {
  const uint64_t sat = uint64_t{1} << 62;
  struct Row {
    uint64_t rate, units, ns;
  };
  const Row rows[] = {
      {1, 1, kSec},           {1, 4'000'000'000, 4'000'000'000 * kSec}, {1, uint64_t{1} << 40, sat},
      {1, UINT64_MAX, sat},   {1'000'000'000, 12345, 12345},          {1'000'000'000, UINT64_MAX, sat},
      {MiB, MiB, kSec},       {GiB, 3 * GiB, 3 * kSec},               {kMaxRate, UINT64_MAX, UINT64_MAX / 1000},
      {64 * KiB, 0, 0},
  };
  for (const Row& r : rows) {
    INFO("rate " << r.rate << " units " << r.units);
    BucketParams p = bucket_params(rule_of(r.rate));
    uint64_t ns = bucket_cost_ns(p, r.units);
    if (r.ns == UINT64_MAX / 1000) CHECK(ns == Approx(static_cast<double>(r.ns)).epsilon(1e-6));
    else CHECK(ns == r.ns);
  }
  SECTION("saturated takes never wrap tat") {
    // A saturated take is a tat beyond max_ahead: the next take forgets it (issue 8,
    // item 8), so tat never climbs past now + max_ahead + one take.
    BucketParams p = bucket_params(rule_of(1));
    BucketState b{};
    for (int i = 0; i < 6; ++i) {
      uint64_t tat = bucket_take(b, p, UINT64_MAX, kUptime);
      CHECK(tat == kUptime + (uint64_t{1} << 62));
      CHECK(b.tat_ns.load() == tat);
    }
  }
}

TEST_CASE("token_bucket: chunks are ~8 ms of rate in whole pages, never below 16 KiB", "[token_bucket]") {
  struct Row {
    uint64_t rate;
    int64_t chunk;
  };
  // 20 MB/s: rate/128 is 156250, cut to 38 pages (a split O_DIRECT read stays aligned).
  const Row rows[] = {{1, 16384},           {MiB, 16384},         {2 * MiB, 16384},
                      {2 * MiB + 128, 16384}, {3 * MiB, 24576},     {20'000'000, 155'648},
                      {100 * MiB, 819200},  {GiB, 8 * 1048576},   {kMaxRate, 7'812'497'408}};
  for (const Row& r : rows) {
    INFO("rate " << r.rate);
    CHECK(bucket_params(rule_of(r.rate)).chunk == r.chunk);
    CHECK(bucket_params(rule_of(r.rate)).chunk % 4096 == 0);
  }
  for (uint64_t rate = 1000; rate < 100'000'000; rate = rate * 7 / 5 + 13) {
    INFO("rate " << rate);
    CHECK(bucket_params(rule_of(rate)).chunk % 4096 == 0);
  }
}

TEST_CASE("token_bucket: credit helpers", "[token_bucket]") {
  BucketParams p = bucket_params(rule_of(MiB));
  REQUIRE(p.batch == 1048);
  CHECK(credit_refill_units(p, 0) == 1048);
  CHECK(credit_refill_units(p, 5) == 1048);
  CHECK(credit_refill_units(p, -500) == 1548);
  // A write of `need` finds its bytes paid when it goes: what is missing plus a batch.
  CHECK(credit_refill_units(p, 100, 4096) == 1048 + 3996);
  CHECK(credit_refill_units(p, -500, 4096) == 1048 + 4596);
  CHECK(credit_refill_units(p, 5000, 4096) == 1048);
  CHECK(credit_refill_units(p, 0, UINT64_MAX) == 1048 + static_cast<uint64_t>(INT64_MAX / 2));  // no overflow
  // Any deficit is settled at once (a read that moved more than its credit).
  CHECK(credit_needs_settle(-1));
  CHECK_FALSE(credit_needs_settle(0));
  CHECK_FALSE(credit_needs_settle(1));
}

TEST_CASE("token_bucket: late charges shift the takers already queued", "[token_bucket]") {
  BucketParams p = bucket_params(rule_of(1'000'000'000));  // 1 ns per unit
  const uint64_t now = kUptime, slack = kDebtNs;
  BucketState b{};
  uint64_t seen = b.late_ns.load();
  uint64_t tat = bucket_take(b, p, 50'000'000, now);  // 50 ms queued
  uint64_t deadline = bucket_eligible(p, tat, now, slack);
  REQUIRE(deadline == now + 40'000'000 + slack);
  // Nothing charged late: the deadline stands, and passed, the taker goes.
  CHECK(bucket_recheck(b, p, deadline, &seen, now, slack) == deadline);
  CHECK(bucket_recheck(b, p, deadline, &seen, deadline, slack) == 0);
  // 3 ms of reads charged late while it slept: it waits 3 ms more, once.
  bucket_take_late(b, p, 3'000'000, deadline - 1);
  CHECK(bucket_recheck(b, p, deadline, &seen, deadline, slack) == deadline + 3'000'000);
  CHECK(bucket_recheck(b, p, deadline + 3'000'000, &seen, deadline + 3'000'000, slack) == 0);
  SECTION("never later than a fresh take would wait") {
    b.late_ns.fetch_add(uint64_t{1} << 62);  // garbage in the segment
    uint64_t d = bucket_recheck(b, p, deadline, &seen, deadline, slack);
    CHECK(d <= bucket_eligible(p, b.tat_ns.load(), deadline, slack));
  }
  SECTION("a late_ns that went backwards or a garbage tat is no wait") {
    b.late_ns.store(0);
    CHECK(bucket_recheck(b, p, deadline, &seen, deadline, slack) <= bucket_eligible(p, b.tat_ns.load(), deadline, slack));
    b.tat_ns.store(UINT64_MAX);
    b.late_ns.store(12345);
    CHECK(bucket_recheck(b, p, deadline, &seen, deadline, slack) == 0);
  }
}

TEST_CASE("token_bucket: concurrent takes from 4 threads sum exactly", "[token_bucket]") {
  BucketParams p = bucket_params(rule_of(1'000'000'000));  // 1 ns per unit
  BucketState b{};
  const uint64_t now = kUptime;
  b.tat_ns.store(now);  // above every thread's floor: each take adds exactly its cost
  constexpr int kThreads = 4, kTakes = 50'000;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      seen[t].reserve(kTakes);
      for (int i = 0; i < kTakes; ++i)
        seen[t].push_back(bucket_take(b, p, static_cast<uint64_t>(t + 1), now - static_cast<uint64_t>(t) * 1000));
    });
  for (auto& t : ts) t.join();
  CHECK(b.tat_ns.load() == now + uint64_t{kTakes} * (1 + 2 + 3 + 4));
  std::vector<uint64_t> all;
  for (auto& v : seen) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());  // every take saw its own tat
  CHECK(all.back() == b.tat_ns.load());
}
