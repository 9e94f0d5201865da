// SPDX-License-Identifier: MIT
// Unit tests of the compression settings' grammar: destinations (prefix and port
// matching) and bonsaictl's checks, which must agree with the library's.
#include <arpa/inet.h>
#include <catch2/catch.hpp>
#include <cstring>
#include <netinet/in.h>
#include <string>

#include "config/yaml_load.h"
#include "compress/compress_config.h"
#include "compress/policy.h"

using namespace bonsai::compress;

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
