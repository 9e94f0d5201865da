// SPDX-License-Identifier: MIT
// Unit tests of the datarate policy's first picks (the round's and the first period's)
// against the CPU: a pick that would run CPU-bound, on the sample or at the ratio the
// stream's history will reach, yields to a cheaper level predicted close to it.
#include <catch2/catch.hpp>

#include "compress/policy.h"
#include "compress_policy_util.h"

using namespace bonsai::compress;
using namespace policy_test;

TEST_CASE("datarate: a pick the model puts CPU-bound yields to a cheaper neighbour within 5%", "[compress]") {
  // Link 10 MB/s. Level 2: ratio 4.0, link-bound at 40 MB/s. Level 3, 3% above it:
  // either CPU-bound (21.9 ns/B at ratio 4.2) or link-bound (ratio 4.12).
  CostModel cpu_bound = round_model({40000, 25000, 23810}, {10000, 20000, 2189000});
  CostModel link_bound = round_model({40000, 25000, 24272}, {10000, 20000, 60000});
  for (const CostModel* m : {&cpu_bound, &link_bound}) {
    bool cpu = m == &cpu_bound;
    INFO((cpu ? "level 3 CPU-bound" : "level 3 link-bound"));
    REQUIRE(model_cpu_bound(*m, 3) == cpu);
    REQUIRE_FALSE(model_cpu_bound(*m, 2));
    REQUIRE(model_rate(*m, 3) == Approx(model_rate(*m, 2) * 1.03).epsilon(0.005));
    REQUIRE(model_best(*m) == 3);
    DatarateState s{};
    datarate_init(s, 4, 1);
    CHECK(datarate_round_pick(s, *m) == (cpu ? 2 : 3));
  }
}

TEST_CASE("datarate: a pick whose CPU would not keep up with the stream's ratio to come yields", "[compress]") {
  // Link 10 MB/s. Level 2: ratio 4.0, 2 ns/B. Level 3: ratio 4.12 on the sample, 3% above
  // level 2; the link takes 24.3 ns per application byte there, 17.3 at kPickHistGain
  // (1.4) times the sampled ratio, which a stream's history reaches; sending costs 2.4.
  for (uint64_t cpu3 : {1'900'000u, 1'300'000u}) {  // 19 or 13 ns/B (and 2.4 to send)
    CostModel m = round_model({40000, 25000, 24272}, {10000, 200000, cpu3});
    bool slow = cpu3 == 1'900'000u;
    INFO((slow ? "19 ns/B" : "13 ns/B"));
    REQUIRE_FALSE(model_cpu_bound(m, 3));  // link-bound at the sampled ratio
    REQUIRE(model_cpu_bound(m, 3, 1.4) == slow);
    REQUIRE(model_best(m) == 3);
    DatarateState s{};
    datarate_init(s, 4, 1);
    CHECK(datarate_round_pick(s, m) == (slow ? 2 : 3));
    // The stream has shown its history's gain: the pick is judged at the ratio it
    // measured. Level 3 at 19 ns/B is then CPU-bound (the link takes 17.3 ns/B) and
    // yields by the 5% rule; at 13 ns/B it keeps up and stays the pick.
    m.hist_gain = 1.4;
    DatarateState t{};
    datarate_init(t, 4, 1);
    CHECK(datarate_round_pick(t, m) == (slow ? 2 : 3));
  }
}
