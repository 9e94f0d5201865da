// SPDX-License-Identifier: MIT
// One take of a call that must not wait (bucket/pace_step.h), the library's and the
// supervisor's: the light path, going now or taking a place in the queue, and under
// shares the rule for borrowing (the rate has no room within its depth) and what the
// host and the ceiling are charged.
#include <catch2/catch.hpp>

#include "bucket/pace_step.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {

constexpr uint64_t MB = 1'000'000;

// 10 MB/s (100 ns a byte, a depth of 10 ms: 100,000 bytes), a ceiling of 40 MB/s, under a
// host of 100 MB/s.
ShareParams shares() {
  Rule r = rule_of(10 * MB);
  r.ceil = 40 * MB;
  r.host1 = 1;
  ShareParams sp{};
  REQUIRE(share_params(r, rule_of(100 * MB), sp));
  return sp;
}

uint64_t tat(const BucketState& s) { return s.tat_ns.load(std::memory_order_relaxed); }

}  // namespace

TEST_CASE("pace_take: an idle bucket lets a call go; a busy one gives places in order", "[pace_step]") {
  BucketParams p = bucket_params(rule_of(MiB));
  BucketState s{};
  uint64_t now = kUptime;
  PaceTake a = pace_take(s, p, {}, {0, 4096, 512}, now);
  CHECK((a.way == PaceWay::Go && a.units == 4096 && a.due == 0));
  CHECK(tat(s) == now + bucket_cost_ns(p, 4096));
  PaceTake b = pace_take(s, p, {}, {0, 4096, 512}, now);
  CHECK((b.way == PaceWay::Queue && b.units == 512));
  CHECK(b.due == now + bucket_cost_ns(p, 4096));  // starts where the queue ends
  PaceTake c = pace_take(s, p, {}, {0, 4096, 512}, now);
  CHECK(c.due == b.due + bucket_cost_ns(p, 512));
  // No place asked (the call holds what it needs): it goes now with that, taking nothing.
  uint64_t before = tat(s);
  PaceTake d = pace_take(s, p, {}, {0, 1, 0}, now);
  CHECK((d.way == PaceWay::Queue && d.units == 0 && d.due == 0));
  CHECK(tat(s) == before);
  // A take costing more than the depth goes on an idle bucket with its place, due now.
  BucketState idle{};
  PaceTake e = pace_take(idle, p, {}, {0, 64 * KiB, 64 * KiB}, now);
  CHECK((e.way == PaceWay::Queue && e.units == 64 * KiB && e.due == 0));
}

TEST_CASE("pace_take: a light write goes ahead of a queue, within the light clock's reach", "[pace_step]") {
  BucketParams p = bucket_params(rule_of(MiB));
  BucketState s{};
  uint64_t now = kUptime;
  // No queue: the light write goes as any other would (the light clock is not spent).
  PaceTake a = pace_take(s, p, {}, {700, 700, 700}, now);
  CHECK(a.way == PaceWay::Go);
  CHECK(s.light_tat_ns.load() == 0);
  s.tat_ns.store(now + 50'000'000);  // a queue of 50 ms
  PaceTake b = pace_take(s, p, {}, {700, 700, 700}, now);
  CHECK((b.way == PaceWay::Light && b.units == 700 && b.due == 0));
  CHECK(tat(s) == now + 50'000'000 + bucket_cost_ns(p, 700));  // charged like any: the queue waits that much longer
  // Larger than pace_light_max: not light, it queues.
  CHECK(pace_take(s, p, {}, {pace_light_max(p) + 1, 700, 700}, now).way == PaceWay::Queue);
  // Beyond the light clock's reach: it queues.
  s.light_tat_ns.store(now + pace_light_reach(p));
  PaceTake c = pace_take(s, p, {}, {700, 700, 700}, now);
  CHECK(c.way == PaceWay::Queue);
  CHECK(c.due > now);
}

TEST_CASE("pace_take: a sharing rate borrows only what it cannot give within its depth", "[pace_step]") {
  ShareParams sp = shares();
  const BucketParams& p = sp.rate;
  uint64_t q = pace_quantum(p);  // 77,824 bytes (19 pages): 7.8 ms of rate
  REQUIRE(bucket_cost_ns(p, q) == 7'782'400);
  REQUIRE(p.depth_ns == 10'000'000);
  uint64_t now = kUptime;
  {  // A queue of 2 ms: a quantum's place ends within the depth. The rate gives it, in order.
    BucketState own{}, host{};
    own.tat_ns.store(now + 2'000'000);
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, q, q}, now);
    CHECK((t.way == PaceWay::Queue && t.units == q && t.due == now + 2'000'000));
    CHECK(tat(host) == now + bucket_cost_ns(sp.host, q));  // its place: the host sees it now
    CHECK(own.ceil_tat_ns.load() == now + bucket_cost_ns(sp.ceil, q));
  }
  {  // A queue of 2.5 ms: it would end past the depth. Borrowed, it goes now; the rate is untouched.
    BucketState own{}, host{};
    own.tat_ns.store(now + 2'500'000);
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, q, q}, now);
    CHECK((t.way == PaceWay::Borrow && t.units == q && t.due == 0));
    CHECK(tat(own) == now + 2'500'000);
    CHECK(tat(host) == now + bucket_cost_ns(sp.host, q));
    CHECK(own.ceil_tat_ns.load() == now + bucket_cost_ns(sp.ceil, q));
  }
  {  // A small place behind 6 ms (more than half the depth) still fits: the rate gives it.
    BucketState own{}, host{};
    own.tat_ns.store(now + 6'000'000);
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, 10'000, 10'000}, now);
    CHECK((t.way == PaceWay::Queue && t.due == now + 6'000'000));
  }
  {  // The rule is that of the refill that may wait: clock_has_room, share_take's step 2.
    for (uint64_t ahead : {0ull, 1'000'000ull, 2'187'500ull, 2'187'501ull, 5'000'000ull, 9'000'000ull}) {
      BucketState own{}, host{}, probe{};
      own.tat_ns.store(now + ahead);
      probe.tat_ns.store(now + ahead);
      ShareStep st = share_take(probe, host, sp, q, now, 0, nullptr);
      BucketState host2{};
      PaceTake t = pace_take(own, p, {&host2, &sp}, {0, q, q}, now);
      INFO("queue " << ahead << " ns");
      CHECK((t.way == PaceWay::Borrow) == (st.way == ShareWay::Borrow));
    }
  }
  {  // An idle rate gives even a take larger than its depth (the most room there is).
    BucketState own{}, host{};
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, 200'000, 200'000}, now);
    CHECK(t.way != PaceWay::Borrow);
    CHECK(tat(own) == now + bucket_cost_ns(p, 200'000));
  }
  {  // Nothing to borrow (the host in debt, or the ceiling): a place in the rate's queue, as
     // without shares; a ceiling that says no leaves the host as it was.
    BucketState own{}, host{};
    own.tat_ns.store(now + 20'000'000);
    host.tat_ns.store(now + 50'000'000);
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, q, q}, now);
    CHECK((t.way == PaceWay::Queue && t.due == now + 20'000'000));
    BucketState own2{}, host2{};
    own2.tat_ns.store(now + 20'000'000);
    own2.ceil_tat_ns.store(now + 50'000'000);
    t = pace_take(own2, p, {&host2, &sp}, {0, q, q}, now);
    CHECK((t.way == PaceWay::Queue && t.due == now + 20'000'000));
    CHECK(tat(host2) == now + bucket_cost_ns(sp.host, q));  // the place only, not a failed borrow
  }
  {  // Without a place the call borrows what it would have taken.
    BucketState own{}, host{};
    own.tat_ns.store(now + 20'000'000);
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, 5000, 0}, now);
    CHECK((t.way == PaceWay::Borrow && t.units == 5000));
  }
  {  // What goes now, or light, is charged to the ceiling and the host as it is taken.
    BucketState own{}, host{};
    PaceTake t = pace_take(own, p, {&host, &sp}, {0, 5000, q}, now);
    CHECK(t.way == PaceWay::Go);
    CHECK(tat(host) == now + bucket_cost_ns(sp.host, 5000));
    own.tat_ns.store(now + 2'000'000);
    t = pace_take(own, p, {&host, &sp}, {700, 700, q}, now);
    CHECK(t.way == PaceWay::Light);
    CHECK(tat(host) == now + bucket_cost_ns(sp.host, 5000) + bucket_cost_ns(sp.host, 700));
    CHECK(own.ceil_tat_ns.load() == now + bucket_cost_ns(sp.ceil, 5000) + bucket_cost_ns(sp.ceil, 700));
  }
}

TEST_CASE("pace_take: without shares the rate never lends, however full", "[pace_step]") {
  BucketParams p = bucket_params(rule_of(10 * MB));
  BucketState s{};
  uint64_t now = kUptime;
  s.tat_ns.store(now + 80'000'000);
  PaceTake t = pace_take(s, p, {}, {0, 1000, 1000}, now);
  CHECK((t.way == PaceWay::Queue && t.due == now + 80'000'000));
}
