// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/bucket/fleet_lease (issue 37): the fallback a host applies
// when its lease runs out (cap / live, never unlimited, never above the cap), the rate
// a grant means, what a host asks for (busy: the whole cap; idle: a minimum; moving
// demand followed within two periods), and the repayment of an outage's excess.
#include <catch2/catch.hpp>

#include "bucket/fleet_lease.h"

#include "limits_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kMiB = 1 << 20;
}  // namespace

TEST_CASE("fleet: the fallback is the cap shared by the live hosts, at least 1", "[fleet]") {
  CHECK(fleet_fallback_rate(8 * kMiB, 4) == 2 * kMiB);
  CHECK(fleet_fallback_rate(8 * kMiB, 0) == 8 * kMiB);  // nobody counted yet: one host
  CHECK(fleet_fallback_rate(3, 4) == 1);                // never zero
  CHECK(fleet_fallback_rate(10, 3) == 3);
  // expected_hosts (issue 50): only before the store counted anyone.
  CHECK(fleet_fallback_rate(8 * kMiB, 0, 4) == 2 * kMiB);
  CHECK(fleet_fallback_rate(8 * kMiB, 2, 4) == 4 * kMiB);  // a grant's count wins
  CHECK(fleet_fallback_rate(8 * kMiB, 0, 0) == 8 * kMiB);
  CHECK(fleet_fallback_rate(3, 0, 100000) == 1);
}

TEST_CASE("fleet: the fallback set replaces rates, keeps rules, never exceeds a cap", "[fleet]") {
  LimitSet in = limits_of("write=1MiB/s,read=2MiB/s,openat=100/s");
  std::atomic<uint64_t> cap[kMaxRules]{}, fb[kMaxRules]{};
  cap[0] = 8 * kMiB, cap[1] = 4 * kMiB, cap[2] = 100;
  fb[0] = 2 * kMiB;   // cap/4
  fb[1] = 64 * kMiB;  // garbage above the cap: cut to the cap
  fb[2] = 0;          // unknown: keep the grant in force
  LimitSet out{};
  CHECK(fleet_fallback_set(in, cap, fb, out) == 2);
  REQUIRE(out.count == 3);
  CHECK(out.rules[0].rate == 2 * kMiB);
  CHECK(out.rules[1].rate == 4 * kMiB);
  CHECK(out.rules[2].rate == 100);
  CHECK(out.rules[0].calls == in.rules[0].calls);
  CHECK(out.rules[2].unit == RateUnit::Calls);
  // Already at the fallback: nothing changes.
  LimitSet again{};
  CHECK(fleet_fallback_set(out, cap, fb, again) == 0);
}

TEST_CASE("fleet: a grant spent over a period is a rate", "[fleet]") {
  CHECK(fleet_grant_rate(2 * kMiB / 4, 250 * kMs) == 2 * kMiB);
  CHECK(fleet_grant_rate(0, 250 * kMs) == 1);  // nothing granted: the slowest rate, never unlimited
  CHECK(fleet_grant_rate(1'000'000, 10'000 * kMs) == 100'000);
  CHECK(fleet_grant_rate(UINT64_MAX / 2, 50 * kMs) == UINT64_MAX);  // saturates
}

TEST_CASE("fleet: a host held by its grant asks for the whole cap", "[fleet]") {
  FleetDemand d;
  uint64_t cap = 2 * kMiB;  // one period's worth
  CHECK(fleet_want(d, {cap / 4, 0, cap / 4, cap, 1000}) == cap);
  CHECK(fleet_want(d, {cap / 4 * 9 / 10, 0, cap / 4, cap, 1000}) == cap);  // 90% of it: still held
}

TEST_CASE("fleet: a host below its grant asks for its use with headroom, at least the minimum", "[fleet]") {
  FleetDemand d;
  uint64_t cap = 4'000'000;
  CHECK(fleet_want(d, {100'000, 0, 1'000'000, cap, 1000}) == 125'000);
  CHECK(fleet_want(d, {0, 0, 1'000'000, cap, 5000}) == 5000);  // demand gone: given back at once
  CHECK(fleet_want(d, {200'000, 0, 1'000'000, cap, 5000}) == 156'250);  // rising: the average (125'000) with headroom
  FleetDemand idle;
  CHECK(fleet_want(idle, {0, 0, 0, cap, 5000}) == 5000);
  // A backlog is asked for on top.
  FleetDemand b;
  CHECK(fleet_want(b, {100'000, 50'000, 1'000'000, cap, 1000}) == 175'000);
  // Never above one period of the cap.
  FleetDemand big;
  CHECK(fleet_want(big, {100'000, 10 * cap, 1'000'000, cap, 1000}) == cap);
}

TEST_CASE("fleet: demand moved away is followed within two periods", "[fleet]") {
  FleetDemand d;
  uint64_t cap = 4'000'000, min = fleet_min_want(cap, 4);
  CHECK(min == 50'000);
  for (int i = 0; i < 5; ++i) fleet_want(d, {cap / 4, 0, cap / 4, cap, min});
  // The host went idle: the next period it asks for the minimum only.
  CHECK(fleet_want(d, {0, 0, cap / 4, cap, min}) == min);
  // Demand arrives at an idle host: held by its small grant, it asks for the whole cap.
  FleetDemand idle;
  fleet_want(idle, {0, 0, min, cap, min});
  CHECK(fleet_want(idle, {min, 0, min, cap, min}) == cap);
}

TEST_CASE("fleet: an outage's excess over the fallback is owed and repaid in a few periods", "[fleet]") {
  // 10 s at a fallback of 1 MiB/s: 10 MiB allowed.
  CHECK(fleet_lapse_excess(10 * kMiB, kMiB, 10'000 * kMs) == 0);
  CHECK(fleet_lapse_excess(12 * kMiB, kMiB, 10'000 * kMs) == 2 * kMiB);
  CHECK(fleet_lapse_excess(0, kMiB, 10'000 * kMs) == 0);
  uint64_t owed = 1001, start = owed, paid = 0;
  int steps = 0;
  while (owed && steps < 100) {
    uint64_t s = fleet_repay_step(owed, start);
    CHECK(s >= 1);
    CHECK(s <= owed);
    owed -= s, paid += s, ++steps;
  }
  CHECK(paid == 1001);
  CHECK(steps == static_cast<int>(kFleetRepayPeriods));
  CHECK(fleet_repay_step(0, 10) == 0);
}

TEST_CASE("fleet: a lease runs two periods", "[fleet]") {
  CHECK(fleet_lease_expiry(1000 * kMs, 250 * kMs) == 1500 * kMs);
}
