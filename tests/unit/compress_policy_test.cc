// SPDX-License-Identifier: MIT
// Unit tests of the compression policies (pure: rates and times are made up) and
// of the configuration parser (destinations, policy names).
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <netinet/in.h>

#include "compress/compress_config.h"
#include "compress/policy.h"

using namespace bonsai::compress;

namespace {
// A simulated link: application rate per level (bytes/s) for one period.
uint8_t run_datarate(const double* rate_of, uint8_t nlevels, int periods, int* visits = nullptr) {
  DatarateState s{};
  datarate_init(s, nlevels, 0);
  for (int i = 0; i < periods; ++i) {
    if (visits) visits[s.ccl]++;
    datarate_next(s, rate_of[s.ccl], 0.1);
  }
  return s.ccl;
}
}  // namespace

TEST_CASE("datarate climbs to the best level and stays there", "[compress]") {
  const double link[] = {10, 20, 27, 31, 12};  // a 10 MiB/s cap: zstd:3 best, zstd:9 CPU-bound
  int visits[5] = {};
  CHECK(run_datarate(link, 5, 200, visits) == 3);
  CHECK(visits[3] > 150);  // probes back off exponentially
  const double cpu[] = {400, 300, 200, 150, 25};  // uncapped: none best
  int v2[5] = {};
  CHECK(run_datarate(cpu, 5, 200, v2) == 0);
  CHECK(v2[0] > 150);
}

TEST_CASE("datarate reverts at once when the rate drops", "[compress]") {
  DatarateState s{};
  datarate_init(s, 5, 0);
  datarate_next(s, 10, 0.2);          // first period: stable, back-off 1 over: probe up
  REQUIRE(s.ccl == 1);
  CHECK(datarate_next(s, 5, 0.2) == 0);  // worse at level 1: straight back
  CHECK(s.bck[1] == 0);
  CHECK(datarate_next(s, 10, 0.2) == 0);  // better again: stay, and back off
  CHECK(s.bck[0] == 1);
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
  for (int i = 0; i < 100; ++i) CHECK(policy_on_chunk(s, ChunkReport{uint64_t(i) * 1000000000, 1, 1000000000, 0}) == 3);
  CHECK(policy_parse("fixed:none", l, c) == nullptr);
  CHECK(c.fixed_level == 0);
  CHECK(policy_parse("fixed:zstd:5", l, c) != nullptr);
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
  for (const char* bad : {"127.0.0.1", "127.0.0.1:0", "300.1.1.1:80", "10.0.0.0/33:*", "host:80"})
    CHECK(dests_parse(bad, cfg) != nullptr);
}
