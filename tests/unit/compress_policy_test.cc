// SPDX-License-Identifier: MIT
// Unit tests of the compression policies and cost model (pure: a simulated link and
// CPU feed them) and of the configuration parser (destinations, policy names).
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <string>
#include <cstring>
#include <netinet/in.h>
#include <random>

#include "../../bonsaictl/yaml_load.h"
#include "compress/compress_config.h"
#include "compress/policy.h"
#include "compress_policy_util.h"

using namespace bonsai::compress;
using namespace policy_test;

namespace {
// A simulated sender: 128 KiB chunks through a level with a true ratio and CPU speed,
// onto a link of `cap` wire bytes/s (0: uncapped) whose send path costs `send_ns`
// per wire byte. As with the real bucket (10 ms deep), compression overlaps the
// refill: a chunk takes max(cpu + send, wire / cap). `noise` jitters each chunk's
// time by up to +-noise (deterministic). Calibration samples report `sample_cpu`
// (the model's view), which may differ from the truth.
struct Sim {
  double ratio[5] = {1, 2.2, 3.4, 3.8, 4.6};
  double cpu_bps[5] = {0, 420e6, 270e6, 170e6, 26e6};
  double sample_cpu_scale[5] = {1, 1, 1, 1, 1};
  double cap = 0, send_ns = 0.3, noise = 0;
  uint64_t bytes[5] = {};
};

// Runs `seconds` of simulated time. @return application bytes sent.
uint64_t simulate(Sim& sim, const char* policy, double seconds, uint8_t* final_level = nullptr) {
  LevelList l{};  // the five levels Sim models (the default list has zstd:6 too)
  REQUIRE(levels_parse("none,lz4,zstd:1,zstd:3,zstd:9", l) == nullptr);
  PolicyConfig c{};
  REQUIRE(policy_parse(policy, l, c) == nullptr);
  PolicyState s{};
  policy_init(s, c, l.count);
  std::mt19937 rng(7);
  const uint64_t chunk = 131072;
  uint64_t now = 1'000'000'000, total = 0;
  auto end = now + static_cast<uint64_t>(seconds * 1e9);
  for (int guard = 0; now < end && guard < 10'000'000; ++guard) {
    uint8_t lv = s.level;
    if (policy_wants_sample(s, now))
      for (uint8_t k = 1; k < l.count; ++k)
        policy_on_sample(s, k, chunk, static_cast<uint64_t>(chunk / sim.ratio[k]),
                         sim.ratio[k] > 1 ? static_cast<uint64_t>(chunk * 1e9 / sim.cpu_bps[k] * sim.sample_cpu_scale[k]) : 0,
                         now, true);  // as calibrate(): incompressible is reported as free
    auto wire = static_cast<uint64_t>(chunk / sim.ratio[lv]) + 12;
    // Incompressible: the guard's 4 KiB lz4 sample, then the chunk goes raw.
    double cpu = !lv ? 0 : sim.ratio[lv] > 1 ? chunk * 1e9 / sim.cpu_bps[lv] : 4096 * 1e9 / sim.cpu_bps[1];
    double work = cpu + sim.send_ns * static_cast<double>(wire);
    double link = sim.cap > 0 ? static_cast<double>(wire) * 1e9 / sim.cap : 0;
    double t = work > link ? work : link;
    t *= 1 + sim.noise * (static_cast<double>(rng() % 2001) / 1000.0 - 1.0);
    auto busy = static_cast<uint64_t>(t);
    uint64_t blocked = busy > static_cast<uint64_t>(work) ? busy - static_cast<uint64_t>(work) : 0;
    now += busy;
    total += chunk;
    sim.bytes[lv] += chunk;
    policy_on_chunk(s, ChunkReport{now, chunk, wire, busy, blocked, static_cast<uint64_t>(cpu)});
  }
  if (final_level) *final_level = s.level;
  return total;
}

// The best fixed level's bytes in the same time (and its index).
uint64_t best_fixed(Sim sim, double seconds, uint8_t* index = nullptr) {
  static const char* names[] = {"fixed:none", "fixed:lz4", "fixed:zstd:1", "fixed:zstd:3", "fixed:zstd:9"};
  uint64_t best = 0;
  for (uint8_t i = 0; i < 5; ++i) {
    uint64_t b = simulate(sim, names[i], seconds);
    if (b > best * 1.01) best = b, index ? (void)(*index = i) : (void)0;  // a tie: the cheaper
  }
  return best;
}
}  // namespace

TEST_CASE("datarate converges to the best level against a simulated link and CPU", "[compress]") {
  // Best levels in this model: zstd:9 at 5 MiB/s, zstd:3 at 20, zstd:1 at 100, none uncapped.
  for (double cap : {5 * 1048576.0, 20 * 1048576.0, 100 * 1048576.0, 0.0}) {
    for (double noise : {0.0, 0.1}) {
      Sim sim;
      sim.cap = cap;
      sim.noise = noise;
      uint8_t final_level = 99, best = 99;
      uint64_t want = best_fixed(sim, 4.0, &best);
      uint64_t got = simulate(sim, "datarate", 4.0, &final_level);
      INFO("cap " << cap / 1048576 << " MiB/s, noise " << noise << ", best level " << int(best));
      CHECK(final_level == best);
      CHECK(static_cast<double>(got) >= 0.95 * static_cast<double>(want));  // issue 5's target
      CHECK(sim.bytes[best] >= 0.85 * static_cast<double>(got));            // probes are rare
    }
  }
}

TEST_CASE("datarate finds the best level when the model is wrong", "[compress]") {
  Sim sim;
  sim.cap = 20 * 1048576.0;
  sim.sample_cpu_scale[3] = 4;  // the model thinks zstd:3 is 4x dearer than it is: starts elsewhere,
                                // and only the unvetoed probes of longer back-offs find it
  uint8_t final_level = 99;
  uint64_t got = simulate(sim, "datarate", 20.0, &final_level);
  CHECK(final_level == 3);
  CHECK(static_cast<double>(got) >= 0.9 * static_cast<double>(best_fixed(sim, 20.0)));
}

TEST_CASE("datarate sends incompressible data uncompressed", "[compress]") {
  for (double cap : {5 * 1048576.0, 0.0}) {
    Sim sim;
    sim.cap = cap;
    for (double& r : sim.ratio) r = 1;  // nothing shrinks (wire == app in samples)
    uint8_t final_level = 99;
    uint64_t got = simulate(sim, "datarate", 4.0, &final_level);
    CHECK(final_level == 0);
    CHECK(static_cast<double>(got) >= 0.99 * static_cast<double>(simulate(sim, "fixed:none", 4.0)));
  }
}

TEST_CASE("datarate reverts at once when a probe lowers the rate", "[compress]") {
  CostModel m{};
  model_init(m, 5);  // nothing sampled: the policy behaves as Algorithm 1
  DatarateState s{};
  datarate_init(s, 5, 0);
  datarate_next(s, 10, 0.2, m);  // first period: the model knows nothing, stay
  REQUIRE(s.ccl == 0);
  datarate_next(s, 10, 0.2, m);  // stable, back-off (2^0) over: probe up
  REQUIRE(s.ccl == 1);
  CHECK(datarate_next(s, 9, 0.2, m) == 0);  // worse at level 1 (even within alpha): straight back
  CHECK(s.bck[1] == 0);
  CHECK(s.bck[0] == 1);  // the level kept backs off
  CHECK(datarate_next(s, 10, 0.2, m) == 0);  // 1 period of 2: no probe yet
  CHECK(datarate_next(s, 10, 0.2, m) == 1);  // back-off over: probe again
  CHECK(datarate_next(s, 15, 0.2, m) == 1);  // better: keep it
  CHECK(s.bck[1] == 1);
  CHECK(datarate_next(s, 5, 0.2, m) == 1);  // a drop without a change of ours: nothing to
  CHECK(s.bck[1] == 0);                      // revert; probe again soon, after a resample
  CHECK(s.dropped);
}

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

TEST_CASE("queue policy follows AdOC Figure 2 and its divergence guard", "[compress]") {
  QueueState q{};
  queue_init(q, 5);
  uint64_t t = 1'000'000'000;
  CHECK(queue_next(q, 15, 10, t) == 1);          // growing queue: one up
  CHECK(queue_next(q, 25, 30, t += 1000) == 3);  // growing fast: two up (level 1 saw 30)
  CHECK(queue_next(q, 35, 12, t += 1000) == 1);  // level 3 sees less than level 1: back, forbid 3
  CHECK(q.forbidden_until[3] > t);
  CHECK(queue_next(q, 0, 25, t += 1000) == 0);  // empty queue: no compression
  QueueState r{};
  queue_init(r, 5);
  r.level = 4;
  r.prev_n = 8;
  CHECK(queue_next(r, 5, 1, t) == 2);  // small and shrinking: halve
}

TEST_CASE("fixed policy never moves; policy names parse", "[compress]") {
  LevelList l = levels_default();
  PolicyConfig c{};
  REQUIRE(policy_parse("fixed:zstd:3", l, c) == nullptr);
  CHECK((c.kind == PolicyKind::Fixed && c.fixed_level == 3));
  PolicyState s{};
  policy_init(s, c, l.count);
  for (int i = 0; i < 100; ++i) CHECK(policy_on_chunk(s, ChunkReport{uint64_t(i) * 1000000000, 1, 1, 1000000000, 0, 0}) == 3);
  CHECK(policy_parse("fixed:none", l, c) == nullptr);
  CHECK(c.fixed_level == 0);
  CHECK(policy_parse("fixed:zstd:4", l, c) != nullptr);  // not in the default list
  CHECK(policy_parse("adaptive", l, c) != nullptr);
  REQUIRE(policy_parse("queue", l, c) == nullptr);
  CHECK(c.kind == PolicyKind::Queue);
}

TEST_CASE("destinations parse and match by prefix and port", "[compress]") {
  CompressConfig cfg{};
  REQUIRE(dests_parse("127.0.0.1:9000,10.0.0.0/8:*,[::1]:7000", cfg) == nullptr);
  REQUIRE(cfg.nto == 3);
  auto v4 = [](const char* a, int port) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    s.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
  };
  auto m = [&](sockaddr_in s) { return dest_match(cfg, reinterpret_cast<sockaddr*>(&s), sizeof s); };
  CHECK(m(v4("127.0.0.1", 9000)));
  CHECK_FALSE(m(v4("127.0.0.1", 9001)));
  CHECK(m(v4("10.200.3.4", 1)));
  CHECK_FALSE(m(v4("11.0.0.1", 9000)));
  sockaddr_in6 s6{};
  s6.sin6_family = AF_INET6;
  s6.sin6_port = htons(7000);
  inet_pton(AF_INET6, "::1", &s6.sin6_addr);
  CHECK(dest_match(cfg, reinterpret_cast<sockaddr*>(&s6), sizeof s6));
  inet_pton(AF_INET6, "::ffff:10.1.2.3", &s6.sin6_addr);  // v4-mapped matches the v4 prefix
  CHECK(dest_match(cfg, reinterpret_cast<sockaddr*>(&s6), sizeof s6));
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "300.1.1.1:80", "10.0.0.0/33:*", "host:80", "::1:80", "::1:*"})
    CHECK(dests_parse(bad, cfg) != nullptr);
}

// Issue 8 item 12: `check` and the library accept the same settings (one grammar).
TEST_CASE("bonsaictl's compression checks agree with the library", "[compress]") {
  using bonsai::ctl::compression_level_problem;
  using bonsai::ctl::compression_target_problem;
  for (const char* ok : {"none", "lz4", "zstd:1", "zstd:19"}) {
    LevelList l{};
    CHECK(levels_parse(ok, l) == nullptr);
    CHECK(compression_level_problem(ok).empty());
  }
  for (const char* bad : {"zstd:20", "zstd:22", "zstd:0", "gzip", "", "lz4,zstd:1"}) {
    CHECK_FALSE(compression_level_problem(bad).empty());
  }
  CompressConfig cfg{};
  for (const char* ok : {"127.0.0.1:80", "10.0.0.0/8:*", "[::1]:80", "[fe80::/10]:*"}) {
    CHECK(dests_parse(ok, cfg) == nullptr);
    CHECK(compression_target_problem(ok).empty());
  }
  for (const char* bad : {"::1:80", "127.0.0.1", "[::1]", "10.0.0.0/40:*", "a,b", ""}) {
    INFO(bad);
    CHECK_FALSE(compression_target_problem(bad).empty());
  }
  CHECK(compression_target_problem("::1:80").find("brackets") != std::string::npos);
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

TEST_CASE("datarate: within the tie margin the trusted model decides; the first pick is judged within alpha",
          "[compress]") {
  CostModel m{};
  model_init(m, 4);
  model_sample(m, 1, 100000, 50000, 10000);  // ratio 2.00, cheap
  model_sample(m, 2, 100000, 25000, 20000);  // ratio 4.00
  model_sample(m, 3, 100000, 24000, 40000);  // ratio 4.17: 4% more, still hidden by the link
  // The cap binds at 10 MB/s of wire.
  model_observe(m, 0, 10'000'000, 10'000'000, 1'000'000'000, 900'000'000, 0);
  REQUIRE(model_best(m) == 3);
  DatarateState s{};
  datarate_init(s, 4, 0);
  CHECK(datarate_next(s, 1.0e7, 0.2, m) == 3);  // the first period: the model's pick
  // Its first (short, history-less) period is 30% above none: kept (within alpha
  // it would be too). Then a stable period, and the probe goes to the cheaper neighbour.
  CHECK(datarate_next(s, 4.1e7, 0.2, m) == 3);
  CHECK(datarate_next(s, 4.15e7, 0.2, m) == 3);  // back-off: 2 periods
  CHECK(datarate_next(s, 4.15e7, 0.2, m) == 2);
  // Level 2 delivers 1% less: within the margin, a tie. The old rule kept the cheaper
  // level; the model, trusted at both (measured near its predictions), predicts level 3
  // 4% better: back to 3.
  CHECK(datarate_next(s, 4.11e7, 0.2, m) == 3);
  // A model measured far from its prediction (CPU taken by others) decides nothing: the
  // tie goes to the cheaper level.
  DatarateState u{};
  datarate_init(u, 4, 3);
  u.warm = true;
  u.pdr = 2.0e7;  // level 3 runs at half its prediction
  u.c = 1;
  CHECK(datarate_next(u, 2.0e7, 0.2, m) == 2);  // stable, back-off over: probe down
  CHECK(datarate_next(u, 1.98e7, 0.2, m) == 2);
}

TEST_CASE("datarate: the first period leaves out the chunks up to the first that waited", "[compress]") {
  LevelList l{};
  REQUIRE(levels_parse("none,lz4,zstd:1", l) == nullptr);
  PolicyConfig c{};
  REQUIRE(policy_parse("datarate", l, c) == nullptr);
  PolicyState s{};
  policy_init(s, c, l.count);
  uint64_t now = 1'000'000'000;
  auto chunk = [&](uint64_t busy, uint64_t blocked) {
    now += busy;
    policy_on_chunk(s, ChunkReport{now, 131072, 131084, busy, blocked, 0});
  };
  // 10 MiB/s of wire: 12.5 ms a chunk. The settling chunk, one more from the bucket's
  // depth, then one that waits for part of a chunk only, then steady chunks.
  chunk(100'000, 0);
  chunk(100'000, 0);
  chunk(3'000'000, 2'900'000);
  for (int i = 0; i < 8 && !s.dr.warm; ++i) chunk(12'500'000, 12'400'000);
  REQUIRE(s.dr.warm);
  CHECK(s.model.wire_bps == Approx(131084 / 12.5e-3).epsilon(0.01));  // not overstated
}

TEST_CASE("datarate under a byte cap starts at the middle of the ladder", "[compress]") {
  PolicyState s = policy_named("datarate", levels_default());
  policy_capped_start(s, 0);
  CHECK(s.level == 3);  // zstd:3 of none,lz4,zstd:1,zstd:3,zstd:5,zstd:6,zstd:9
  CHECK(s.dr.ccl == 3);
  s = policy_named("fixed:lz4", levels_default());
  policy_capped_start(s, 5e6);
  CHECK(s.level == 1);  // other policies: untouched
  CHECK(s.model.wire_bps == 0);
}

TEST_CASE("datarate under a cap of known rate picks its level on the first calibration round", "[compress]") {
  LevelList l = levels_default();
  PolicyConfig c{};
  REQUIRE(policy_parse("datarate", l, c) == nullptr);
  // One round on a 131072-byte chunk of text: ratio and ns per byte of lz4, zstd:1, 3,
  // 5, 6, 9 (as measured on HIGH: CPU-bound zstd:9 at ~38 MiB/s).
  const double ratio[] = {2.3, 3.3, 3.9, 4.1, 4.3, 4.4}, ns_byte[] = {2.0, 4.5, 7.5, 13.0, 17.0, 25.0};
  auto round = [&](PolicyState& s) {
    for (uint8_t k = 1; k < l.count; ++k)
      policy_on_sample(s, k, 131072, static_cast<uint64_t>(131072 / ratio[k - 1]),
                       static_cast<uint64_t>(131072 * ns_byte[k - 1]), 1'000'000'000, true);
  };
  auto first_level = [&](double rate) {
    PolicyState s{};
    policy_init(s, c, l.count);
    policy_capped_start(s, rate);
    round(s);
    return s.level;
  };
  CHECK(first_level(5 * 1048576.0) == 6);    // zstd:9: link-bound at 22 MiB/s
  CHECK(first_level(100 * 1048576.0) == 1);  // lz4: the others CPU-bound
  CHECK(first_level(0) == 3);                // the cap's rate unknown: the first period decides
  CHECK(first_level(1e300) == 3);            // nor a rate beyond any link
  // Later rounds (after the first period) leave the level to Algorithm 1.
  PolicyState s{};
  policy_init(s, c, l.count);
  policy_capped_start(s, 100 * 1048576.0);
  s.dr.warm = true;
  round(s);
  CHECK(s.level == 3);
}

TEST_CASE("datarate: a probe between zstd levels (a new frame, no history) is judged by the model within 8%",
          "[compress]") {
  CostModel m{};
  model_init(m, 4);
  model_sample(m, 1, 100000, 50000, 10000);  // ratio 2.00
  model_sample(m, 2, 100000, 25000, 20000);  // ratio 4.00
  model_sample(m, 3, 100000, 24000, 40000);  // ratio 4.17
  model_observe(m, 0, 10'000'000, 10'000'000, 1'000'000'000, 900'000'000, 0);  // 10 MB/s link
  for (bool fresh : {false, true}) {
    DatarateState s{};
    datarate_init(s, 4, 2);
    if (fresh) s.fresh = 0b1100;  // levels 2 and 3: zstd
    s.warm = true;
    s.pdr = 4.0e7;
    s.c = 1;
    s.inc = true;
    REQUIRE(datarate_next(s, 4.0e7, 0.2, m) == 3);  // probe up
    // The probe reads 5% low (its frame has no history yet): measured, a loss; the
    // model, trusted at both, predicts level 3 4% better.
    CHECK(datarate_next(s, 3.8e7, 0.2, m) == (fresh ? 3 : 2));
  }
}

TEST_CASE("datarate: a capped start whose cap did not bind picks the best compressing level", "[compress]") {
  CostModel m{};
  model_init(m, 4);
  model_sample(m, 1, 100000, 25000, 300000);   // lz4: ratio 4, 3 ns/B
  model_sample(m, 2, 100000, 20000, 500000);   // ratio 5, 5 ns/B
  model_sample(m, 3, 100000, 19000, 1000000);  // ratio 5.3, 10 ns/B
  // The first period at level 2 was CPU-bound: no link seen.
  model_observe(m, 2, 10'000'000, 2'000'000, 50'000'000, 0, 50'000'000);
  REQUIRE(m.wire_bps == 0);
  REQUIRE(model_best(m) == 0);  // `none` looks infinitely fast without a link
  DatarateState s{};
  datarate_init(s, 4, 2);
  CHECK(datarate_next(s, 2.0e8, 0.2, m) == 1);  // lz4: the fastest compressing level
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

TEST_CASE("datarate: a probe is judged on the same data: each period's verdict by the model", "[compress]") {
  // A round over every level on one chunk: ratios 2.50, 4.00 and 4.20 (zstd:6, level 3,
  // 5% above zstd:3, level 2), 0.2 and 0.6 ns/B at levels 2 and 3; the link 10 MB/s.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  // A later sample of level 3 alone, on another (less compressible) chunk: not compared.
  model_sample(m, 3, 100000, 40000, 60000);
  // Probes from level `from` (its period `before`) to `to` (its period `after`).
  auto judged = [](const CostModel& cm, uint8_t from, const PeriodMeasure& before, uint8_t to,
                   const PeriodMeasure& after) {
    DatarateState s = steady_at(from, rate_of(before), to > from, true);
    if (to < from)  // a long back-off: probed though the link binds (see the veto below)
      s.bck[from] = kGateBackoff, s.c = 1u << kGateBackoff;
    s.period = before;
    REQUIRE(datarate_next(s, rate_of(before), 0.2, cm) == to);
    s.period = after;
    return datarate_next(s, rate_of(after), 0.2, cm);
  };
  // The probe to level 3 landed on data 16% less compressible: its rate reads 12% low,
  // outside every margin. Both waited for the bucket: level 3's 5% more on the same
  // data decide, kept.
  PeriodMeasure at2 = measured(4.0e6, 4.0, 0.2, 1e7), at3_worse_data = measured(3.52e6, 3.52, 0.6, 1e7);
  CHECK(judged(m, 2, at2, 3, at3_worse_data) == 3);
  // A probe down to level 2 that reads 3% higher on more compressible data: level 3 kept.
  PeriodMeasure at3 = measured(4.2e6, 4.2, 0.6, 1e7), at2_better_data = measured(4.33e6, 4.33, 0.2, 1e7);
  CHECK(judged(m, 3, at3, 2, at2_better_data) == 3);
  // The probe turned CPU-bound (the stream ran at 30 ns/B: 33 MB/s against 40 MB/s at
  // level 2): both verdicts agree, reverted.
  CHECK(judged(m, 2, at2, 3, measured(3.3e6, 4.2, 30, 1e7)) == 2);
  // Levels the round cannot tell apart (within 1%): no verdict, the rates decide.
  CostModel tie = m;
  tie.level[3].pair_ratio = 4.02;
  CHECK(judged(tie, 2, at2, 3, at3_worse_data) == 2);
  // A calibration that got level 3's CPU wrong (90 ns/B: CPU-bound at 11 MB/s by it)
  // while the stream ran it link-bound at 0.6 ns/B: the verdicts with the calibrated and
  // the measured CPU disagree, so the rates decide (here level 3 read 5% higher: kept),
  // not the wrong calibration.
  CostModel wrong = round_model({40000, 25000, 23800}, {10000, 20000, 9000000});
  CHECK(judged(wrong, 2, at2, 3, measured(4.2e6, 4.2, 0.6, 1e7)) == 3);
  // One-shot calibration overstates a dearer zstd level's CPU systematically (zstd:5
  // over zstd:3 on text: 1.9-2.3x in rounds, 1.24-1.6x in the stream): even 1.4x off,
  // a verdict the measured CPU does not share is no verdict. Level 2 waits 40% of its
  // time at 15 ns/B; level 3 runs 1.3x that, still link-bound, and reads 5% higher.
  // Calibrated at 1.8x, level 3 would be CPU-bound: before, that alone reverted it.
  CostModel dear = round_model({40000, 25000, 23800}, {10000, 1500000, 2700000});
  CHECK(judged(dear, 2, measured(4.0e6, 4.0, 15, 1e7), 3, measured(4.2e6, 4.2, 19.5, 1e7)) == 3);
  // Where the stream's own CPU makes level 3 CPU-bound too (2x: 30 ns/B), reverted.
  CHECK(judged(dear, 2, measured(4.0e6, 4.0, 15, 1e7), 3, measured(3.5e6, 4.2, 30, 1e7)) == 2);
}

TEST_CASE("datarate: waiting for the bucket, a cheaper level with a lower ratio on the same chunk is not probed",
          "[compress]") {
  // Ratios 2.50, 4.00 and 4.20 on one chunk: level 2 is 5% below level 3.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  for (bool bound : {false, true}) {
    DatarateState s = steady_at(3, 4.2e7, false, bound);
    INFO("bound " << bound);
    CHECK(datarate_next(s, 4.2e7, 0.2, m) == (bound ? 3 : 2));  // vetoed only while bound
    if (bound) CHECK(s.inc);  // a failed probe: the other direction next
  }
  // Ruled out without a probe, the way down costs no period: the neighbour above is
  // probed at once (it was probed a back-off later, 1.2 s of text at 20 MiB/s spent at
  // zstd:3 waiting 40% of its time, zstd:5 moving 6% more).
  DatarateState mid = steady_at(2, 4.0e7, false, true);
  CHECK(datarate_next(mid, 4.0e7, 0.2, m) == 3);
  CHECK(mid.probe_from == 2);
  // Within half the tie margin (.gz: every zstd level alike one-shot): probed.
  CostModel tie = m;
  tie.level[2].pair_ratio = 4.18;
  DatarateState t = steady_at(3, 4.2e7, false, true);
  CHECK(datarate_next(t, 4.2e7, 0.2, tie) == 2);
  // A long back-off probes regardless, so a stale round cannot pin a level for ever.
  DatarateState u = steady_at(3, 4.2e7, false, true);
  u.bck[3] = kGateBackoff;
  u.c = 1u << kGateBackoff;
  CHECK(datarate_next(u, 4.2e7, 0.2, m) == 2);
}

TEST_CASE("datarate: waiting for the bucket, a dearer level is probed even if the model predicts a loss",
          "[compress]") {
  // Level 3 sampled at 90 ns/B: predicted CPU-bound.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 9000000});
  REQUIRE(model_rate(m, 3) < 0.98 * model_rate(m, 2));
  for (bool bound : {false, true}) {
    DatarateState s = steady_at(2, 4.0e7, true, bound);
    CHECK(datarate_next(s, 4.0e7, 0.2, m) == (bound ? 3 : 2));  // vetoed unless bound
  }
}

TEST_CASE("datarate: a level above whose measured CPU ceiling is below the rate is not probed", "[compress]") {
  // The mix's promoted chunks measured level 3 (tx_stream.cc): it compresses at most
  // `up_cpu_rate`. At any back-off, bound or not, a probe could only lose.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 9000000});
  for (bool bound : {false, true}) {
    for (double ceiling : {3.0e7, 4.0e7, 4.1e7, 6.0e7}) {
      INFO("bound " << bound << ", ceiling " << ceiling);
      DatarateState s = steady_at(2, 4.0e7, true, bound);
      s.bck[2] = kMaxBackoff;  // past the model's gate
      s.c = 1u << kMaxBackoff;
      s.up_cpu_rate = ceiling;
      uint8_t next = datarate_next(s, 4.0e7, 0.2, m);
      if (ceiling < 4.0e7 * (1 + kTieMargin)) CHECK(next != 3);  // the other neighbour, or stay
      else CHECK(next == 3);
    }
  }
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

TEST_CASE("datarate: levels a round cannot tell apart are neither picked nor probed across a new zstd frame",
          "[compress]") {
  // Data whose gain is the stream's history (.gz files): one-shot, every zstd level
  // samples the same ratio, and each change of zstd level drops that history.
  // Ratios 1.010, 1.075 and 1.078 (a 0.2% "gain" for level 3).
  CostModel m = round_model({99000, 93000, 92800}, {10000, 20000, 40000});
  REQUIRE(model_best(m) == 3);
  // The first period (a state not yet warm) at level 2, the link binding.
  auto first_period = [](uint8_t fresh) {
    DatarateState s{};
    datarate_init(s, 4, 2);
    s.fresh = fresh;
    s.bound = true;
    return s;
  };
  for (uint8_t fresh : {0b1100, 0b0000}) {  // levels 2 and 3 zstd; or two other codecs
    DatarateState s = first_period(fresh);
    CHECK(datarate_next(s, 1.08e7, 0.2, m) == 2);  // no pick
    // Stable periods while the link binds: the probe down (level 1, predicted 6% worse)
    // is vetoed as before; the probe up is ruled out only across a new zstd frame.
    uint8_t highest = 2;
    for (int i = 0; i < 8; ++i) {
      uint8_t l = datarate_next(s, 1.08e7, 0.2, m);
      highest = l > highest ? l : highest;
    }
    INFO("fresh " << int(fresh));
    CHECK(highest == (fresh ? 2 : 3));
  }
  // The same ratios 5% apart: the pick is made.
  model_sample(m, 3, 100000, 88000, 40000, true);  // EWMA: ~1.11
  DatarateState t = first_period(0b1100);
  CHECK(datarate_next(t, 1.08e7, 0.2, m) == 3);
}
