// SPDX-License-Identifier: MIT
// Joining a service's running supervisor (abi/sv_join.h): the socket's name is the same
// for the supervisor and the library, bounded by the space it has, never empty-named.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "abi/sv_join.h"

using namespace bonsai;

TEST_CASE("sv_join_name: prefix, uid and service", "[sv_join]") {
  char buf[107];
  size_t n = sv_join_name(buf, sizeof buf, "integ12.", 65534, "web");
  REQUIRE(std::string(buf, n) == "bonsai-sv.integ12.65534.web");
  n = sv_join_name(buf, sizeof buf, "", 0, "a");
  REQUIRE(std::string(buf, n) == "bonsai-sv.0.a");
  n = sv_join_name(buf, sizeof buf, nullptr, 4294967295u, "svc");
  REQUIRE(std::string(buf, n) == "bonsai-sv.4294967295.svc");
}

TEST_CASE("sv_join_name: no service or no room, no name", "[sv_join]") {
  char buf[107];
  REQUIRE(sv_join_name(buf, sizeof buf, "", 1000, "") == 0);
  REQUIRE(sv_join_name(buf, sizeof buf, "", 1000, nullptr) == 0);
  std::string longsvc(120, 's');
  REQUIRE(sv_join_name(buf, sizeof buf, "", 1000, longsvc.c_str()) == 0);
  char tiny[12];
  REQUIRE(sv_join_name(tiny, sizeof tiny, "", 1000, "web") == 0);
  // Exactly full fits.
  char exact[16];
  REQUIRE(sv_join_name(exact, sizeof exact, "", 1, "abcd") == 16);
}
