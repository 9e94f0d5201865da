// SPDX-License-Identifier: MIT
// Unit tests of the compression cost model (policy_model.h): predicted rates, what a
// stream's own ratio and CPU correct, what a period tells about other levels, the cap.
#include <catch2/catch.hpp>

#include "compress/compress_config.h"
#include "compress/policy.h"
#include "compress_policy_util.h"

using namespace bonsai::compress;
using namespace policy_test;

TEST_CASE("cost model predicts the link-bound and CPU-bound rates", "[compress]") {
  CostModel m{};
  model_init(m, 3);
  model_sample(m, 1, 100000, 25000, 100000);  // ratio 4, 1 ns/B
  model_sample(m, 2, 100000, 100000, 0);      // does not compress
  // A period at none where the bucket bound: 10 MB in 1 s, 0.9 s of it waiting.
  model_observe(m, 0, 10'000'000, 10'000'000, 1'000'000'000, 900'000'000, 0);
  CHECK(m.wire_bps == Approx(1e7));
  CHECK(model_rate(m, 0) == Approx(1e7));
  CHECK(model_rate(m, 1) == Approx(4e7));  // link-bound: 4 x 10 MB/s
  CHECK(model_best(m) == 1);
  CHECK(model_rate(m, 2) <= model_rate(m, 0));  // ties go to the cheaper level
}

TEST_CASE("cost model: a stream's ratio and CPU correct every level's calibration", "[compress]") {
  CostModel m{};
  model_init(m, 3);
  model_sample(m, 1, 100000, 50000, 100000);  // one-shot: ratio 2, 1 ns/B
  model_sample(m, 2, 100000, 40000, 300000);  // one-shot: ratio 2.5, 3 ns/B
  // A period at level 1 where the bucket bound: the stream reached ratio 4 (history)
  // at 2 ns/B (a flush per small write).
  model_observe(m, 1, 10'000'000, 2'500'000, 1'000'000'000, 900'000'000, 20'000'000);
  CHECK(m.hist_gain == Approx(1.5));  // half way to 2 (EWMA)
  CHECK(m.cpu_gain == Approx(1.5));
  CHECK(model_rate(m, 1) == Approx(2 * 1.5 * m.wire_bps));  // link-bound at the corrected ratio
  CHECK(model_rate(m, 2) == Approx(2.5 * 1.5 * m.wire_bps));
  CHECK(model_best(m) == 2);
  // A period at none corrects nothing.
  model_observe(m, 0, 10'000'000, 10'000'000, 1'000'000'000, 900'000'000, 0);
  CHECK(m.hist_gain == Approx(1.5));
}

TEST_CASE("cost model: a period tells what another level would have moved on its data", "[compress]") {
  // Ratios 2.5, 4.0, 4.2 and 0.1, 0.2, 0.6 ns/B on one chunk; the link 10 MB/s.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  REQUIRE(m.wire_bps == Approx(1e7));
  REQUIRE(model_pair_cpu_scale(m, 2, 3) == Approx(3.0));
  // Data 10% less compressible than the chunk, at level 2: level 3 on it, 3.78 x the link.
  PeriodMeasure p = measured(3.6e6, 3.6, 0.2, 1e7);
  CHECK(model_rate_on(m, p, 2, 2, 1) == Approx(3.6e7).epsilon(1e-3));
  CHECK(model_rate_on(m, p, 2, 3, 3.0) == Approx(3.78e7).epsilon(1e-3));
  // The same data where level 3's CPU is 200x level 2's (40 ns/B): CPU-bound.
  CHECK(model_rate_on(m, p, 2, 3, 200) == Approx(1e9 / 40).epsilon(1e-2));
  // Unknown: `none`, a level without a round, a link never seen binding.
  CHECK(model_rate_on(m, p, 2, 0, 1) == 0);
  CostModel spread = m;
  spread.level[3].pair_known = false;
  CHECK(model_rate_on(spread, p, 2, 3, 3.0) == 0);
  CostModel unbound = m;
  unbound.wire_bps = 0;
  CHECK(model_rate_on(unbound, p, 2, 3, 3.0) == 0);
}

TEST_CASE("cost model: the link is never faster than the cap", "[compress]") {
  CostModel m{};
  model_init(m, 4);
  m.cap_bps = 20e6;
  // A period that waited, 21.8 MB/s on the wire (the bucket's depth let a burst through).
  model_observe(m, 1, 100'000'000, 21'800'000, 1'000'000'000, 500'000'000, 100'000'000);
  CHECK(m.wire_bps == 20e6);
  model_observe(m, 1, 100'000'000, 19'000'000, 1'000'000'000, 500'000'000, 100'000'000);
  CHECK(m.wire_bps < 20e6);
  m.cap_bps = 0;  // no cap known: what was measured
  model_observe(m, 1, 100'000'000, 30'000'000, 1'000'000'000, 500'000'000, 100'000'000);
  CHECK(m.wire_bps > 20e6);
}

TEST_CASE("cost model: a period that waited a little below the cap is not the link", "[compress]") {
  // Issue 53: a sender kept off the CPU by other processes waits a little after its
  // stalls (the bucket refilled while it could not run) and leaves the link idle
  // meanwhile: 12% of a period waiting at 77% of a 10 MiB/s cap, as measured.
  const double cap = 10 * 1048576.0;
  CostModel m{};
  model_init(m, 4);
  m.cap_bps = cap;
  // A period at the cap, 80% of it waiting: the link.
  model_observe(m, 1, 40'000'000, static_cast<uint64_t>(cap), 1'000'000'000, 800'000'000, 150'000'000);
  REQUIRE(m.wire_bps == Approx(cap));
  auto wire = [&](double share) { return static_cast<uint64_t>(share * cap); };  // in 1 s
  CHECK_FALSE(model_link_bound(m, wire(0.77), 1'000'000'000, 120'000'000, kBindingShare));
  model_observe(m, 3, 30'000'000, wire(0.77), 1'000'000'000, 120'000'000, 870'000'000);
  CHECK(m.wire_bps == Approx(cap));  // before: lowered half way to 7.7 MiB/s
  // Within kLinkFull of the cap: the link, however little it waited.
  CHECK(model_link_bound(m, wire(0.95), 1'000'000'000, 60'000'000, kBindingShare));
  // Waiting most of the time at half the cap: a cap shared with others, the link.
  CHECK(model_link_bound(m, wire(0.5), 1'000'000'000, 600'000'000, kBindingShare));
  // Not waiting: never the link.
  CHECK_FALSE(model_link_bound(m, wire(1.0), 1'000'000'000, 10'000'000, kBindingShare));
  // No cap known: the wait decides, as before.
  m.cap_bps = 0;
  CHECK(model_link_bound(m, wire(0.77), 1'000'000'000, 120'000'000, kBindingShare));
}
