// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/runtime/fleet_lapse (issue 37): a process applies its fleet
// fallback by itself once the lease has run out -- not before, once per lapse (until a
// renewal clears it), never unlimited (a fallback of 0 keeps the rate), never above the
// cap -- and a wait wakes at the lease's expiry.
#include <catch2/catch.hpp>

#include <memory>

#include "runtime/fleet_lapse.h"
#include "runtime/ticket.h"
#include "sys/clock.h"

#include "runtime_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSec = 1'000'000'000;

uint64_t rate_in_force(uint32_t rule) { return g_limiter.view.load()->set.rules[rule].rate; }

// The block of a fleet service with one or two rules; detached at the end of the test.
struct FleetFixture {
  std::unique_ptr<ShmFleet> f = std::make_unique<ShmFleet>();
  FleetFixture() {
    fleet_lapse_cleared();
    fleet_lapse_attach(f.get());
  }
  ~FleetFixture() {
    fleet_lapse_attach(nullptr);
    fleet_lapse_cleared();
  }
};
}  // namespace

TEST_CASE("fleet lapse: nothing before the lease runs out, the fallback once after", "[fleet_lapse]") {
  limiter_fresh("write=6MiB/s,read=1MiB/s");  // this host's grant
  FleetFixture fx;
  ShmFleet& f = *fx.f;
  f.cap[0] = 8 * kMiB, f.fallback[0] = 2 * kMiB;
  f.cap[1] = 4 * kMiB, f.fallback[1] = 1 * kMiB;
  uint64_t now = mono_ns();
  CHECK_FALSE(fleet_lapse_due(now));  // no lease yet: the limits apply as written
  f.lease_expiry_ns = now + kSec;
  CHECK_FALSE(fleet_lapse_due(now));
  CHECK(fleet_lapse_wake(now + 5 * kSec) == now + kSec);  // a long wait wakes at the expiry
  CHECK(fleet_lapse_wake(now + kSec / 2) == now + kSec / 2);
  CHECK(fleet_lapse_due(now + kSec));
  REQUIRE(fleet_lapse_apply());
  CHECK(rate_in_force(0) == 2 * kMiB);
  CHECK(rate_in_force(1) == 1 * kMiB);
  CHECK(g_limiter.view.load()->set.count == 2);
  CHECK(f.lib_fallbacks == 1);
  // In force: not applied again, and waits no longer wake for it.
  CHECK_FALSE(fleet_lapse_due(now + 2 * kSec));
  CHECK_FALSE(fleet_lapse_apply());
  CHECK(f.lib_fallbacks == 1);
  CHECK(fleet_lapse_wake(now + 5 * kSec) == now + 5 * kSec);
  // A renewal (the segment's limits installed again) clears it; a later lapse applies again.
  REQUIRE(limiter_install(limits_of("write=7MiB/s,read=1MiB/s")));
  fleet_lapse_cleared();
  CHECK(rate_in_force(0) == 7 * kMiB);
  CHECK(fleet_lapse_due(now + 2 * kSec));
  REQUIRE(fleet_lapse_apply());
  CHECK(rate_in_force(0) == 2 * kMiB);
  CHECK(f.lib_fallbacks == 2);
}

TEST_CASE("fleet lapse: never unlimited, never above the cap", "[fleet_lapse]") {
  limiter_fresh("write=3MiB/s,openat=50/s");
  FleetFixture fx;
  ShmFleet& f = *fx.f;
  f.cap[0] = 8 * kMiB, f.fallback[0] = 0;          // unknown: the grant stays
  f.cap[1] = 100, f.fallback[1] = 1'000'000'000;   // garbage above the cap: the cap
  f.lease_expiry_ns = 1;
  REQUIRE(fleet_lapse_due(mono_ns()));
  fleet_lapse_apply();
  REQUIRE(g_limiter.view.load() != nullptr);
  CHECK(g_limiter.view.load()->set.count == 2);
  CHECK(rate_in_force(0) == 3 * kMiB);
  CHECK(rate_in_force(1) == 100);
  Ticket t = ticket_for(CallId::write, -1);
  CHECK(t.bucket == 0);  // still limited
}

TEST_CASE("fleet lapse: no fleet block, nothing to do", "[fleet_lapse]") {
  limiter_fresh("write=3MiB/s");
  fleet_lapse_attach(nullptr);
  CHECK_FALSE(fleet_lapse_due(mono_ns()));
  CHECK_FALSE(fleet_lapse_apply());
  CHECK(fleet_lapse_wake(123) == 123);
  CHECK(rate_in_force(0) == 3 * kMiB);
}
