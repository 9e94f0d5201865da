// SPDX-License-Identifier: MIT
// Unit tests of the datarate policy against the link's bound: a level's link ceiling on
// a period's data (a cheaper level that cannot beat the current rate is not probed) and
// the cap's current rate (a cap changed live restarts the policy).
#include <catch2/catch.hpp>

#include "compress/policy.h"
#include "compress_policy_util.h"

using namespace bonsai::compress;
using namespace policy_test;

TEST_CASE("cost model: a level's link ceiling on a period's data", "[compress]") {
  // Ratios 2.5, 4.0, 4.2 on one chunk; the link 10 MB/s, a cap of 10 MB/s.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  m.cap_bps = 1e7;
  // A period at level 3 on data 10% less compressible than the chunk (3.78).
  PeriodMeasure p = measured(3.78e6, 3.78, 30, 1e7);
  CHECK(model_link_ceiling_on(m, p, 3, 2) == Approx(3.6e7).epsilon(1e-3));
  CHECK(model_link_ceiling_on(m, p, 3, 3) == Approx(3.78e7).epsilon(1e-3));
  CHECK(model_link_ceiling_on(m, p, 3, 0) == Approx(1e7));  // none: the link itself
  // Unknown: no round at that level, the link never seen, an empty period.
  CostModel spread = m;
  spread.level[2].pair_known = false;
  CHECK(model_link_ceiling_on(spread, p, 3, 2) == 0);
  CHECK(model_link_ceiling_on(m, PeriodMeasure{}, 3, 2) == 0);
  // No byte cap (a socket-bound link has no upper bound): unknown, whatever was measured.
  CostModel uncapped = m;
  uncapped.cap_bps = 0;
  CHECK(model_link_ceiling_on(uncapped, p, 3, 2) == 0);
  // A cap raised live to 100 MB/s: the ceiling follows it, not the link measured before.
  CostModel raised = m;
  raised.cap_bps = 1e8;
  CHECK(model_link_ceiling_on(raised, p, 3, 2) == Approx(3.6e8).epsilon(1e-3));
}

TEST_CASE("datarate: a cheaper level whose link ceiling is not 3% above the rate is neither probed nor picked",
          "[compress]") {
  // Ratios 2.5, 4.0, 4.2 on one chunk; the link and the cap 10 MB/s: level 2 can never
  // move more than 40 MB/s of that data, however fast the CPU.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  m.cap_bps = 1e7;
  // Level 3 CPU-bound (the bucket never waited) at `rate` on data like the chunk's.
  auto cpu_bound_at3 = [](double rate) { return measured(rate * 0.2, 4.2, 1e9 / rate, 1e7); };
  // Stable, its back-off over, the next probe down: vetoed at 39.5 MB/s (level 2's
  // ceiling 40 is 1.3% above), made at 37 MB/s (8% above).
  for (double rate : {3.95e7, 3.7e7}) {
    DatarateState s = steady_at(3, rate, false, false);
    s.period = cpu_bound_at3(rate);
    INFO("level 3 at " << rate);
    CHECK(datarate_next(s, rate, 0.2, m) == (rate > 3.9e7 ? 3 : 2));
  }
  // A long back-off probes regardless (the cap may have been raised since).
  DatarateState u = steady_at(3, 3.95e7, false, false);
  u.bck[3] = kGateBackoff;
  u.c = 1u << kGateBackoff;
  u.period = cpu_bound_at3(3.95e7);
  CHECK(datarate_next(u, 3.95e7, 0.2, m) == 2);
  // The cap raised live to 100 MB/s (the link measured before still reads 10): probed.
  DatarateState r = steady_at(3, 3.95e7, false, false);
  r.period = cpu_bound_at3(3.95e7);
  CostModel raised = m;
  raised.cap_bps = 1e8;
  CHECK(datarate_next(r, 3.95e7, 0.2, raised) == 2);
  // The first period, at level 3, calibrated at 26 ns/B (CPU-bound at 38.5 MB/s): the
  // model (corrected by the period's CPU) puts level 2 first; its ceiling decides
  // whether the pick is made.
  for (double rate : {3.9e7, 3.5e7}) {
    CostModel mm = round_model({40000, 25000, 23800}, {10000, 20000, 2600000});
    mm.cap_bps = 1e7;
    PeriodMeasure p = cpu_bound_at3(rate);
    model_observe(mm, 3, p.app, p.wire, p.busy_ns, p.blocked_ns, p.cpu_ns);
    REQUIRE(model_best(mm) == 2);
    DatarateState s{};
    datarate_init(s, 4, 3);
    s.period = p;
    INFO("first period at " << rate);
    CHECK(datarate_next(s, rate, 0.2, mm) == (rate > 3.8e7 ? 3 : 2));
  }
}

TEST_CASE("datarate: a cap changed live restarts the policy with the new rate as the link", "[compress]") {
  PolicyState s = policy_named("datarate", levels_default());
  policy_capped_start(s, 5e6);
  policy_cap_rate(s, 5e6);  // the first write: no change
  uint64_t now = 1'000'000'000;
  // Link-bound chunks at 5 MB/s (26 ms of wire each) until warm and past a few periods.
  for (int i = 0; i < 60; ++i) {
    now += 26'000'000;
    policy_on_chunk(s, ChunkReport{now, 131072, 131084, 26'000'000, 25'000'000, 1'000'000});
    policy_cap_rate(s, 5e6);  // unchanged: nothing restarts
  }
  REQUIRE(s.dr.warm);
  uint8_t level = s.level;
  s.dr.bck[level] = 4;  // a back-off earned at the old cap
  policy_cap_rate(s, 5.02e6);  // within 1%: the same cap
  CHECK(s.dr.warm);
  policy_cap_rate(s, 1e8);  // `bonsaictl set` to 100 MB/s
  CHECK_FALSE(s.dr.warm);
  CHECK(s.dr.bck[level] == 0);
  CHECK(s.dr.probe_from == -1);
  CHECK(s.model.cap_bps == 1e8);
  CHECK(s.model.wire_bps == 1e8);
  CHECK(s.level == level);  // the level stays until the next period's pick
  CHECK(s.acc_chunks == 0);
  // Other policies keep their state.
  PolicyState f = policy_named("fixed:zstd:3", levels_default());
  policy_cap_rate(f, 5e6);
  policy_cap_rate(f, 1e8);
  CHECK(f.model.wire_bps == 0);
}

TEST_CASE("datarate: a starved sender's short waits neither bind nor lower the link", "[compress]") {
  // Issue 53 (docs/notes/compression-measured.md#long-repeated-text-issue-53): a sender that
  // other processes keep off the CPU moves 77% of a 10 MiB/s cap while waiting 12% of
  // its time. Taken as link-bound, such periods lowered the link's estimate (to 7.0 MiB/s
  // in a traced run) and sent probes up from a CPU-bound level.
  const double cap = 10 * 1048576.0;
  PolicyState s = policy_named("datarate", levels_default());
  policy_capped_start(s, cap);
  policy_cap_rate(s, cap);
  uint64_t now = 1'000'000'000;
  const uint64_t app = 131072, wire = 32768 + 12;
  auto chunks = [&](int n, double wire_share, double wait_share) {
    auto busy = static_cast<uint64_t>(static_cast<double>(wire) * 1e9 / (wire_share * cap));
    auto blocked = static_cast<uint64_t>(wait_share * static_cast<double>(busy));
    for (int i = 0; i < n; ++i) {
      now += busy;
      policy_on_chunk(s, ChunkReport{now, app, wire, busy, blocked, busy - blocked});
    }
  };
  chunks(200, 1.0, 0.6);  // at the cap, waiting: warm, the link known
  REQUIRE(s.dr.warm);
  REQUIRE(s.dr.bound);
  REQUIRE(s.model.wire_bps == Approx(cap).epsilon(0.02));
  chunks(150, 0.77, 0.12);  // starved: >= 2 periods
  CHECK_FALSE(s.dr.bound);
  CHECK(s.model.wire_bps == Approx(cap).epsilon(0.02));
}
