// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/serve_guard (#36): which client addresses count against
// --max-per-address (loopback is exempt), and basic auth's bcrypt budget with its
// cache of matched passwords.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>

#include "serve/serve_guard.h"

using namespace bonsai::ctl;

namespace {

std::string key_of(const PerAddress& pa, const char* text) {
  sockaddr_storage ss{};
  if (std::strchr(text, ':')) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    REQUIRE(inet_pton(AF_INET6, text, &a->sin6_addr) == 1);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    REQUIRE(inet_pton(AF_INET, text, &a->sin_addr) == 1);
  }
  return address_key(pa, reinterpret_cast<const sockaddr*>(&ss));
}

// "s3cret", cost 10 (python3 crypt.mksalt(METHOD_BLOWFISH)).
constexpr const char* kHash = "$2b$10$InG0FGIk0.BnIKmKZQxWJeRmpc0BemjFHCK1wZ.8EceFohLI5187O";

}  // namespace

TEST_CASE("serve_guard: loopback addresses are exempt from --max-per-address", "[serve_guard]") {
  PerAddress pa;
  for (const char* lo : {"127.0.0.1", "127.0.0.200", "127.255.255.254", "::1", "::ffff:127.0.0.3"})
    CHECK(key_of(pa, lo).empty());
  CHECK(key_of(pa, "192.0.2.2").size() == 4);
  CHECK(key_of(pa, "128.0.0.1").size() == 4);
  CHECK(key_of(pa, "fd00::2").size() == 16);
  CHECK(key_of(pa, "::ffff:192.0.2.2").size() == 16);
  CHECK(key_of(pa, "192.0.2.2") != key_of(pa, "192.0.2.3"));
  pa.limit = 0;  // no bound: nothing counted
  CHECK(key_of(pa, "192.0.2.2").empty());
}

TEST_CASE("serve_guard: wrong passwords get Busy past the bcrypt budget; a matched one never does", "[serve_guard]") {
  // A clock held still: on a loaded machine each bcrypt takes long enough to refill
  // the budget it spends, and Busy would never come.
  BasicAuth auth([] { return std::chrono::steady_clock::time_point{}; });
  std::map<std::string, std::string> users{{"prom", kHash}};
  CHECK(auth.check(users, "prom", "s3cret") == BasicAuth::Result::Ok);
  bool busy = false;
  for (int i = 0; i < 30 && !busy; ++i) {
    auto r = auth.check(users, i % 2 ? "prom" : "nobody", "wrong");
    CHECK(r != BasicAuth::Result::Ok);
    busy = r == BasicAuth::Result::Busy;
  }
  CHECK(busy);
  CHECK(auth.check(users, "prom", "s3cret") == BasicAuth::Result::Ok);  // remembered: no bcrypt, no budget
  CHECK(auth.check(users, "prom", "s3cret!") == BasicAuth::Result::Busy);
  CHECK(auth.check(users, "other", "s3cret") != BasicAuth::Result::Ok);
}
