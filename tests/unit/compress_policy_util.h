// SPDX-License-Identifier: MIT
// Helpers for the policy unit tests (compress_policy_test.cc, compress_datarate_test.cc,
// compress_model_test.cc, compress_policy_link_test.cc):
// datarate states, cost models after one calibration round, periods as a sender reports
// them, and a policy state by name.
#pragma once
#include <catch2/catch.hpp>
#include <cstdint>

#include "compress/policy.h"

namespace policy_test {
using namespace bonsai::compress;

// A policy state for `name` ("datarate", "fixed:lz4") over `levels`, as a connection starts.
inline PolicyState policy_named(const char* name, const LevelList& levels) {
  PolicyConfig c{};
  REQUIRE(policy_parse(name, levels, c) == nullptr);
  PolicyState s{};
  policy_init(s, c, levels.count);
  return s;
}

// A warm datarate state at `level` of 4, steady at `rate`, whose back-off is over: its
// next decision probes the neighbour in direction `up`. `bound`: its period waited.
inline DatarateState steady_at(uint8_t level, double rate, bool up, bool bound) {
  DatarateState s{};
  datarate_init(s, 4, level);
  s.warm = true;
  s.pdr = rate;
  s.c = 1;
  s.inc = up;
  s.bound = bound;
  return s;
}

// A cost model of 4 levels after one calibration round on one 100,000-byte chunk (level
// k compressed into wire[k-1] bytes in cpu_ns[k-1]), with the cap binding at 10 MB/s.
inline CostModel round_model(const uint64_t (&wire)[3], const uint64_t (&cpu_ns)[3]) {
  CostModel m{};
  model_init(m, 4);
  for (uint8_t k = 1; k <= 3; ++k) model_sample(m, k, 100000, wire[k - 1], cpu_ns[k - 1], true);
  model_observe(m, 0, 10'000'000, 10'000'000, 1'000'000'000, 900'000'000, 0);
  return m;
}

// A period of `app` bytes compressed `ratio` times at `cpu` ns per byte onto a link of
// `link_bps` wire bytes/s (the bucket refills while it compresses): as the sender
// reports it.
inline PeriodMeasure measured(double app, double ratio, double cpu, double link_bps) {
  double wire = app / ratio, cpu_ns = app * cpu, link_ns = wire * 1e9 / link_bps;
  double busy = cpu_ns > link_ns ? cpu_ns : link_ns;
  return PeriodMeasure{static_cast<uint64_t>(app), static_cast<uint64_t>(wire), static_cast<uint64_t>(busy),
                       static_cast<uint64_t>(busy - cpu_ns), static_cast<uint64_t>(cpu_ns)};
}
inline double rate_of(const PeriodMeasure& p) { return static_cast<double>(p.app) * 1e9 / static_cast<double>(p.busy_ns); }

}  // namespace policy_test
