// SPDX-License-Identifier: MIT
// Unit tests of shares (issue 38): the three-state refill of bucket/share.h (the
// ceiling, the guaranteed rate, borrowing from the host) under a fake clock, and a
// simulated two-tenant timeline: a busy tenant takes the idle one's capacity up to its
// ceiling, both keep their rates when both are busy, and a tenant back from idle has
// its rate at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "abi/limit_parse.h"
#include "bucket/share.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {

constexpr uint64_t MB = 1'000'000;

Rule share_rule(uint64_t rate, uint64_t ceil) {
  Rule r = rule_of(rate);
  r.ceil = ceil;
  r.host1 = 1;
  return r;
}

// A tenant as the library drives it: writes of 64 KiB, each refill what is missing plus
// a batch, a perfect sleep to go_at, busy in [busy_from, busy_to).
struct Tenant {
  BucketState own{};
  ShareParams p{};
  uint64_t busy_from, busy_to;
  uint64_t now;
  bool retry = false;
  ShareStep last{};
  std::vector<std::pair<uint64_t, uint64_t>> moved;  // (time, units)
  uint64_t borrowed = 0;

  uint64_t in(uint64_t from, uint64_t to) const {
    uint64_t sum = 0;
    for (auto& [t, u] : moved)
      if (t >= from && t < to) sum += u;
    return sum;
  }
};

void simulate(std::vector<Tenant*> ts, BucketState& host, uint64_t end) {
  for (;;) {
    Tenant* t = nullptr;
    for (Tenant* c : ts)
      if (c->now < end && (!t || c->now < t->now)) t = c;
    if (!t) return;
    if (t->now < t->busy_from) {
      t->now = t->busy_from;
      continue;
    }
    if (t->now >= t->busy_to) {
      t->now = end;
      continue;
    }
    uint64_t units = credit_refill_units(t->p.rate, 0, 64 * KiB);
    ShareStep st = share_take(t->own, host, t->p, units, t->now, kDebtNs, t->retry ? &t->last : nullptr);
    if (st.way == ShareWay::Wait) {
      t->retry = true;
      t->last = st;
      t->now = st.go_at > st.ceil_at ? st.go_at : st.ceil_at;
      continue;
    }
    t->retry = false;
    uint64_t go = st.go_at > t->now ? st.go_at : t->now;
    t->moved.emplace_back(go, units);
    if (st.way == ShareWay::Borrow) t->borrowed += units;
    t->now = go + 1000;  // the call itself: 1 us
  }
}

double rate_in(const Tenant& t, uint64_t from, uint64_t to) {
  return static_cast<double>(t.in(from, to)) * kSec / static_cast<double>(to - from);
}

}  // namespace

TEST_CASE("shares: a rule without a ceiling above its rate does not share", "[shares]") {
  ShareParams p;
  Rule cap = rule_of(100 * MB);
  CHECK_FALSE(share_params(rule_of(10 * MB), cap, p));
  Rule r = share_rule(10 * MB, 10 * MB);
  CHECK_FALSE(share_params(r, cap, p));
  r.ceil = 20 * MB;
  CHECK(share_params(r, cap, p));
  cap.unit = RateUnit::Calls;
  CHECK_FALSE(share_params(r, cap, p));  // another unit: unusable, held to its rate
  cap = rule_of(0);
  CHECK_FALSE(share_params(r, cap, p));
}

TEST_CASE("shares: the grammar's :ceil=, checked against the rate", "[shares]") {
  LimitSet set{};
  ParseError err;
  REQUIRE(limit_parse("reads=10MB/s:ceil=40MB/s", set, err));
  CHECK(set.rules[0].rate == 10 * MB);
  CHECK(set.rules[0].ceil == 40 * MB);
  char buf[128];
  rule_format(set.rules[0], buf, sizeof buf);
  CHECK(std::string(buf) == "reads=10MB/s:ceil=40MB/s");
  CHECK_FALSE(limit_parse("reads=10MB/s:ceil=5MB/s", set, err));
  CHECK(std::string(err.message).find("below the rule's rate") != std::string::npos);
  CHECK(err.offset == 18);
  CHECK_FALSE(limit_parse("reads=10MB/s:ceil=40/s", set, err));
  CHECK_FALSE(limit_parse("reads=10MB/s:ceil=40MB/s:ceil=50MB/s", set, err));
}

TEST_CASE("shares: shares_resolve finds the capacity rule of a rule's calls", "[shares]") {
  LimitSet cap{}, set{};
  ParseError err;
  REQUIRE(limit_parse("writes=100MB/s,reads=200MB/s", cap, err));
  REQUIRE(limit_parse("read=10MB/s:ceil=50MB/s,write=10MB/s,openat=10/s", set, err));
  shares_resolve(set, cap);
  CHECK(set.rules[0].host1 == 2);
  CHECK(set.rules[1].host1 == 0);  // no ceiling: nothing to borrow
  CHECK(set.rules[2].host1 == 0);
}

TEST_CASE("shares: the three states of a refill", "[shares]") {
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  BucketState own{}, host{};
  uint64_t now = kUptime;
  uint64_t units = 100'000;  // 10 ms at the rate, 2.5 ms at the ceiling, 1 ms of the host

  // Everything idle: the rate takes them and charges the host.
  ShareStep st = share_take(own, host, p, units, now, kDebtNs, nullptr);
  CHECK(st.way == ShareWay::Rate);
  CHECK(st.go_at == 0);
  CHECK(host.tat_ns.load() == now + bucket_cost_ns(p.host, units));

  // The rate is spent (10 ms ahead, its depth): the host lends.
  st = share_take(own, host, p, units, now, kDebtNs, nullptr);
  CHECK(st.way == ShareWay::Borrow);

  // The host is in debt beyond its depth too (a busy neighbour): wait for the earlier.
  host.tat_ns.store(now + 50'000'000);
  st = share_take(own, host, p, units, now, kDebtNs, nullptr);
  CHECK(st.way == ShareWay::Wait);
  CHECK(st.go_at > now);
  CHECK(st.go_at <= now + 10'000'000);  // the rate comes back within a depth, before the host

  // The ceiling binds: its debt holds the units even with an idle host and rate.
  BucketState own2{}, host2{};
  own2.ceil_tat_ns.store(now + 30'000'000);
  st = share_take(own2, host2, p, units, now, kDebtNs, nullptr);
  CHECK(st.way == ShareWay::Rate);
  CHECK(st.ceil_at > now);
  CHECK(st.go_at == st.ceil_at);
}

TEST_CASE("shares: a taker its rate and host never have room for commits to its rate after kShareRounds",
          "[shares]") {
  // Units costing more than the depth (a supervised call's debt piece: 100 ms of rate) go
  // on an idle clock only; other takers (the library's threads, a batch each) keep the
  // rate and the host from ever being idle when it tries.
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  BucketState own{}, host{};
  uint64_t now = kUptime;
  auto others = [&](uint64_t at) {
    clock_take(own.tat_ns, p.rate, 10'000, at);
    clock_take(host.tat_ns, p.host, 10'000, at);
  };
  const uint64_t units = 1'000'000;
  others(now);
  ShareStep st = share_take(own, host, p, units, now, kDebtNs, nullptr);
  REQUIRE(st.way == ShareWay::Wait);
  CHECK(st.rounds == 1);
  // A caller back before its time (the supervisor pays at any notification) has not
  // served a round: it may try, it is not counted.
  ShareStep early = share_take(own, host, p, units, now, kDebtNs, &st);
  CHECK(early.way == ShareWay::Wait);
  CHECK(early.rounds == 1);
  uint32_t retries = 0;
  while (st.way == ShareWay::Wait && retries < 100) {
    now = std::max(st.go_at, st.ceil_at);
    others(now);
    st = share_take(own, host, p, units, now, kDebtNs, &st);
    ++retries;
  }
  CHECK(retries == kShareRounds);
  REQUIRE(st.way == ShareWay::Rate);
  // Charged to the rate (and the host) behind the takes made: it waits that out, no more.
  uint64_t tat = own.tat_ns.load();
  CHECK(tat >= now + bucket_cost_ns(p.rate, units));
  CHECK(st.go_at == bucket_eligible(p.rate, tat, now, kDebtNs));
  CHECK(st.go_at > now);
}

TEST_CASE("shares: a garbage host clock is forgotten, not waited for", "[shares]") {
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  BucketState own{}, host{};
  uint64_t now = kUptime;
  own.tat_ns.store(now + 9'500'000);  // 1 ms more would pass the depth
  host.tat_ns.store(UINT64_MAX - 5);
  ShareStep st = share_take(own, host, p, 10'000, now, kDebtNs, nullptr);
  CHECK(st.way == ShareWay::Borrow);
  CHECK(host.tat_ns.load() < now + 1'000'000);
}

TEST_CASE("shares: a read's overdraft charges the ceiling and the rate or the host", "[shares]") {
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  BucketState own{}, host{};
  uint64_t now = kUptime;
  CHECK(share_take_late(own, host, p, 50'000, now) == ShareWay::Rate);
  CHECK(own.ceil_tat_ns.load() > now);
  CHECK(share_take_late(own, host, p, 200'000, now) == ShareWay::Borrow);
  CHECK(host.tat_ns.load() == now + bucket_cost_ns(p.host, 250'000));
}

TEST_CASE("shares: two tenants on a timeline: work conserving, isolated, quick back from idle", "[shares]") {
  BucketState host{};
  Rule cap = rule_of(100 * MB);
  Tenant a, b;
  REQUIRE(share_params(share_rule(50 * MB, 100 * MB), cap, a.p));
  REQUIRE(share_params(share_rule(50 * MB, 100 * MB), cap, b.p));
  uint64_t t0 = kUptime;
  a.busy_from = t0, a.busy_to = t0 + 2 * kSec, a.now = t0;
  b.busy_from = t0 + kSec, b.busy_to = t0 + 2 * kSec, b.now = t0;
  simulate({&a, &b}, host, t0 + 2 * kSec);

  // B idle: A has the whole capacity (its ceiling), most of it borrowed.
  double a_alone = rate_in(a, t0 + 100'000'000, t0 + kSec);
  CHECK(a_alone >= 0.95 * 100 * MB);
  CHECK(a_alone <= 1.02 * 100 * MB);
  CHECK(a.borrowed > 30 * MB);
  // Both busy: each keeps its rate, together no more than the capacity.
  double a_both = rate_in(a, t0 + 1'100'000'000, t0 + 2 * kSec);
  double b_both = rate_in(b, t0 + 1'100'000'000, t0 + 2 * kSec);
  CHECK(a_both >= 0.98 * 50 * MB);
  CHECK(b_both >= 0.98 * 50 * MB);
  CHECK(a_both + b_both <= 1.03 * 100 * MB);
  // B back from idle: 95% of its rate within 20 ms.
  CHECK(rate_in(b, t0 + kSec, t0 + kSec + 20'000'000) >= 0.95 * 50 * MB);
}

TEST_CASE("shares: the ceiling bounds a borrower; spare capacity is split, guarantees kept", "[shares]") {
  BucketState host{};
  Rule cap = rule_of(100 * MB);
  Tenant a, b;
  REQUIRE(share_params(share_rule(20 * MB, 50 * MB), cap, a.p));
  REQUIRE(share_params(share_rule(30 * MB, 100 * MB), cap, b.p));
  uint64_t t0 = kUptime;
  a.busy_from = t0, a.busy_to = t0 + 2 * kSec, a.now = t0;
  b.busy_from = t0 + kSec, b.busy_to = t0 + 2 * kSec, b.now = t0;
  simulate({&a, &b}, host, t0 + 2 * kSec);
  double a_alone = rate_in(a, t0 + 100'000'000, t0 + kSec);
  CHECK(a_alone >= 0.95 * 50 * MB);  // min(ceil, capacity) = 50 MB/s
  CHECK(a_alone <= 1.02 * 50 * MB);
  double a_both = rate_in(a, t0 + 1'100'000'000, t0 + 2 * kSec);
  double b_both = rate_in(b, t0 + 1'100'000'000, t0 + 2 * kSec);
  CHECK(a_both >= 0.98 * 20 * MB);
  CHECK(b_both >= 0.98 * 30 * MB);
  CHECK(a_both <= 1.02 * 50 * MB);
  CHECK(a_both + b_both <= 1.03 * 100 * MB);
  CHECK(a_both + b_both >= 0.95 * 100 * MB);  // the spare 50 MB/s is lent, not wasted
}

TEST_CASE("shares: any clock values (another user's garbage) neither hang nor hold for long", "[shares]") {
  std::mt19937_64 rng(38);
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  const uint64_t now = kUptime;
  const uint64_t specials[] = {0, 1, now - 1, now, now + 1, UINT64_MAX, UINT64_MAX - 1, uint64_t{1} << 63};
  for (int i = 0; i < 20000; ++i) {
    BucketState own{}, host{};
    auto pick = [&] { return rng() % 3 == 0 ? specials[rng() % 8] : now + (rng() % (uint64_t{1} << 40)); };
    own.tat_ns.store(pick());
    own.ceil_tat_ns.store(pick());
    host.tat_ns.store(pick());
    uint64_t units = rng() % (uint64_t{1} << (rng() % 40));
    ShareStep st = share_take(own, host, p, units, now, kDebtNs, nullptr);
    uint64_t bound = now + p.rate.max_ahead_ns + p.ceil.max_ahead_ns + bucket_cost_ns(p.rate, units) + kSec;
    CHECK(st.ceil_at <= bound);
    CHECK(st.go_at <= bound);
    if (st.way == ShareWay::Wait) CHECK(st.go_at > now);
    share_take_late(own, host, p, units, now);  // never waits: must simply return
  }
}

TEST_CASE("shares: threads racing on one rule and one host lose no take", "[shares]") {
  // Four threads refill a rule and its host at once (the same clock for all: what moves is
  // the CAS loops' races, not time); every unit taken lands on exactly the clocks it must.
  ShareParams p;
  REQUIRE(share_params(share_rule(10 * MB, 40 * MB), rule_of(100 * MB), p));
  BucketState own{}, host{};
  const uint64_t now = kUptime;
  std::atomic<uint64_t> rate_units{0}, borrow_units{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int k = 0; k < 2000; ++k) {
        ShareStep st = share_take(own, host, p, 1000, now, kDebtNs, nullptr);
        if (st.way == ShareWay::Rate) rate_units += 1000;
        if (st.way == ShareWay::Borrow) borrow_units += 1000;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(own.ceil_tat_ns.load() == now + bucket_cost_ns(p.ceil, 1000) * 8000);
  CHECK(own.tat_ns.load() == now + bucket_cost_ns(p.rate, 1000) * (rate_units / 1000));
  CHECK(host.tat_ns.load() == now + bucket_cost_ns(p.host, 1000) * ((rate_units + borrow_units) / 1000));
  CHECK(rate_units <= 10 * MB / 100 + 1000);  // within the rate's depth (10 ms)
  CHECK(rate_units + borrow_units <= 10 * MB / 100 + 100 * MB / 100 + 2000);  // and the host's
}

TEST_CASE("shares: a container's published takes are held back, clamped to its guarantee", "[shares]") {
  // 4 MB/s over 100 ms: 400 kB moved.
  CHECK(share_reserved_rate(1000, 1000 + 400'000, 100'000'000, 4 * MB) == 4 * MB);
  CHECK(share_reserved_rate(0, 100'000, 100'000'000, 4 * MB) == 1 * MB);
  // A forged counter (a huge jump, or the top of the range) holds back the guarantee, never more.
  CHECK(share_reserved_rate(0, ~uint64_t{0}, 1, 4 * MB) == 4 * MB);
  CHECK(share_reserved_rate(5, ~uint64_t{0}, 100'000'000, 4 * MB) == 4 * MB);
  // Backwards, no time, no guarantee: nothing.
  CHECK(share_reserved_rate(500, 100, 100'000'000, 4 * MB) == 0);
  CHECK(share_reserved_rate(0, 100, 0, 4 * MB) == 0);
  CHECK(share_reserved_rate(0, 100'000, 100'000'000, 0) == 0);
  // The host keeps at least a sixteenth of its capacity however much is held back.
  CHECK(share_host_rate(16 * MB, 4 * MB) == 12 * MB);
  CHECK(share_host_rate(16 * MB, 0) == 16 * MB);
  CHECK(share_host_rate(16 * MB, 16 * MB) == MB);
  CHECK(share_host_rate(16 * MB, ~uint64_t{0}) == MB);
  CHECK(share_host_rate(3, 10) == 1);
}

TEST_CASE("shares: beside a container at its guarantee, a borrower gets what is left of the capacity", "[shares]") {
  // docs/reference/shares.md: capacity 16, a 4 (in a container: never charges the host) and b 8,
  // both ceil 16. Without the hold-back b borrows a's guarantee too (16: 1.25x the
  // capacity with a's 4); with it, b runs at the capacity less a's published 4.
  for (bool hold : {false, true}) {
    Rule cap = rule_of(16 * MB);
    uint64_t reserved = hold ? share_reserved_rate(0, 400'000, 100'000'000, 4 * MB) : 0;
    rule_set_rate(cap, share_host_rate(16 * MB, reserved));
    Tenant b{.busy_from = 0, .busy_to = 2 * kSec, .now = 0};
    REQUIRE(share_params(share_rule(8 * MB, 16 * MB), cap, b.p));
    BucketState host{};
    simulate({&b}, host, 2 * kSec);
    double got = rate_in(b, kSec / 2, 2 * kSec);
    if (hold) {
      CHECK(got + 4 * MB <= 16 * MB * 1.02);
      CHECK(got >= 8 * MB);  // b's own guarantee holds
    } else {
      CHECK(got + 4 * MB > 16 * MB * 1.2);
    }
  }
}
