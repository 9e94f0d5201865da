// SPDX-License-Identifier: MIT
// Fractional rates (2.5/s, 0.4/s, 1.3KiB/s) kept exactly: the limit language, the Rule's
// representation (the whole rate rounded up, what older readers take, and the millionths
// below it), the bucket's arithmetic over many rates, and `set --merge` keeping what a
// newer rule leaves an older one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "abi/limit_parse.h"
#include "bucket/token_bucket.h"
#include "config/limits_merge.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {

Rule one(const std::string& text) {
  LimitSet set{};
  ParseError err;
  INFO(text << ": " << err.message);
  REQUIRE(limit_parse(text, set, err));
  REQUIRE(set.count == 1);
  return set.rules[0];
}

std::string refusal(const std::string& text) {
  LimitSet set{};
  ParseError err;
  if (limit_parse(text, set, err)) return "";
  return err.message;
}

std::string format(const Rule& r) {
  char buf[256];
  rule_format(r, buf, sizeof buf);
  return buf;
}

// Calls a caller making back-to-back one-call takes gets through a call-rate bucket of
// `rule` in `seconds` of fake time, from an idle bucket.
uint64_t calls_in(const Rule& rule, uint64_t seconds) {
  BucketState b{};
  BucketParams p = bucket_params(rule);
  Caller c{&b, &p, true, kDebtNs, kUptime};
  const uint64_t end = kUptime + seconds * kSec;
  for (uint64_t i = 0; i < 10'000'000 && c.now < end; ++i) c.call(1, 1'000);
  return c.moved;
}

}  // namespace

TEST_CASE("rate fractions: the language keeps them exactly", "[rate_fraction]") {
  struct Row {
    const char* text;
    uint64_t micro;
    uint64_t whole;  // what a reader that predates the fraction takes: rounded up
  };
  const Row rows[] = {
      {"write=2.5/s", 2'500'000, 3},      {"fsync=0.5/s", 500'000, 1},       {"fsync=0.4/s", 400'000, 1},
      {"openat=0.001/s", 1'000, 1},       {"openat=1.000001/s", 1'000'001, 2}, {"openat=199.99/s", 199'990'000, 200},
      {"openat=200/s", 200'000'000, 200}, {"read=1.3KiB/s", 1'331'200'000, 1332}, {"read=0.5B/s", 500'000, 1},
      {"read=10.1MiB/s", 10'590'617'600'000, 10'590'618}, {"read=2.5KB/s", 2'500'000'000, 2500},
  };
  for (const Row& r : rows) {
    INFO(r.text);
    Rule rule = one(r.text);
    CHECK(rule_rate_micro(rule) == r.micro);
    CHECK(rule.rate == r.whole);
    CHECK(rule.rate_less_micro == r.whole * kRateMicro - r.micro);
    // Printed back as written (or an equal decimal), and parsed back to the same rate.
    Rule again = one(format(rule));
    CHECK(rule_rate_micro(again) == r.micro);
  }
  CHECK(format(one("write=2.5/s")) == "write=2.5/s");
  CHECK(format(one("fsync=0.5/s")) == "fsync=0.5/s");
  CHECK(format(one("read=1.3KiB/s")) == "read=1.3KiB/s");
  CHECK(format(one("read=10.1MiB/s")) == "read=10.1MiB/s");
  CHECK(format(one("read=1.5MiB/s")) == "read=1536KiB/s");  // whole: as before
}

TEST_CASE("rate fractions: what cannot be kept is refused with the reason", "[rate_fraction]") {
  CHECK(refusal("openat=0.0000001/s").find("cannot be kept exactly") != std::string::npos);
  CHECK(refusal("openat=1.0000005/s").find("millionth") != std::string::npos);
  CHECK(refusal("read=0.0000001B/s").find("cannot be kept exactly") != std::string::npos);
  CHECK(refusal("openat=0.0001/s").find("slowest rate") != std::string::npos);
  CHECK(refusal("openat=0/s").find("> 0") != std::string::npos);
  CHECK(refusal("openat=0.0/s").find("> 0") != std::string::npos);
  CHECK(refusal("write=2.5/s:ceil=3.5/s").find("whole number") != std::string::npos);
  CHECK(refusal("write=2.5/s:ceil=3/s").empty());  // a fractional rate under a whole ceiling
  CHECK(refusal("write=3/s:ceil=2.5/s") != "");
  uint64_t rate;
  RateUnit unit;
  ParseError err;
  CHECK_FALSE(rate_parse("2.5/s", rate, unit, err));  // the whole-rate parser (ceilings, floors)
  CHECK(std::string(err.message).find("whole number") != std::string::npos);
  uint64_t micro = 0;
  REQUIRE(rate_parse_micro("0.4/s", micro, unit, err));
  CHECK(micro == 400'000);
}

TEST_CASE("rate fractions: a ceiling equal to the rounded-up rate still borrows", "[rate_fraction]") {
  Rule r = one("write=2.5/s:ceil=3/s");
  CHECK(rule_ceil_above(r));
  CHECK_FALSE(rule_ceil_above(one("write=3/s:ceil=3/s")));
  CHECK_FALSE(rule_ceil_above(one("write=3/s")));
}

TEST_CASE("rate fractions: a forged fraction is ignored, never a zero rate", "[rate_fraction]") {
  Rule r = one("write=2/s");
  r.rate_less_micro = 5'000'000;  // out of range
  CHECK(rule_rate_micro(r) == 2'000'000);
  r.rate = 1;
  r.rate_less_micro = 999'999;
  CHECK(rule_rate_micro(r) == 1);
  BucketParams p = bucket_params(r);  // at least the slowest rate the parser allows
  CHECK(bucket_cost_ns(p, 1) <= 1000 * kSec);
}

TEST_CASE("rate fractions: the bucket holds each rate over many", "[rate_fraction]") {
  // The first call is free (a call rate's depth is one call); then one every 1/rate.
  for (const char* text : {"write=2.5/s", "fsync=0.5/s", "fsync=0.4/s", "openat=0.1/s", "openat=0.25/s",
                           "openat=0.3/s", "openat=1.5/s", "openat=7.75/s", "openat=33.333333/s", "openat=0.01/s",
                           "openat=999.5/s"}) {
    Rule rule = one(text);
    double rate = static_cast<double>(rule_rate_micro(rule)) / 1e6;
    uint64_t seconds = rate < 0.2 ? 2000 : 200;
    uint64_t calls = calls_in(rule, seconds);
    INFO(text << ": " << calls << " calls in " << seconds << " s");
    // + the depth let go at once: one call, or 10 ms of rate when that is more
    double depth = std::max(1.0, std::floor(rate * 0.01));
    double expect = rate * static_cast<double>(seconds) + depth;
    CHECK(static_cast<double>(calls) == Approx(expect).margin(1.01));
  }
}

TEST_CASE("rate fractions: 11 one-call writes at 2.5/s take 4 s", "[rate_fraction]") {
  Rule rule = one("write=2.5/s");
  BucketState b{};
  BucketParams p = bucket_params(rule);
  Caller c{&b, &p, true, kDebtNs, kUptime};
  for (int i = 0; i < 10'000 && c.moved < 11; ++i) c.call(1, 0);
  CHECK(c.moved == 11);
  double secs = static_cast<double>(c.now - kUptime) / 1e9;
  CHECK(secs == Approx(4.0).margin(0.01));
  // Byte rates below a unit a second: 1 byte every 2 s at 0.5B/s.
  CHECK(bucket_cost_ns(bucket_params(one("read=0.5B/s")), 1) == 2 * kSec);
  CHECK(bucket_cost_ns(bucket_params(one("openat=0.001/s")), 1) == 1000 * kSec);
}

TEST_CASE("set --merge: an older rule keeps what the newer ones leave it", "[rate_fraction][limits_merge]") {
  auto merged = [](const std::string& base_text, const std::string& extra_text, std::string& why) {
    LimitSet base{}, extra{};
    ParseError err;
    REQUIRE(limit_parse(base_text, base, err));
    REQUIRE(limit_parse(extra_text, extra, err));
    std::string out;
    if (!ctl::limits_merge(base, extra, why)) return std::string("refused");
    for (uint32_t r = 0; r < base.count; ++r) out += (out.empty() ? "" : ",") + format(base.rules[r]);
    LimitSet again{};
    CHECK(limit_parse(out, again, err));  // one call in one bucket still
    return out;
  };
  std::string why;
  CHECK(merged("write=10MiB/s", "writes=20MiB/s:fd=socket", why) == "write=10MiB/s:fd=file+pipe,writes=20MiB/s:fd=socket");
  CHECK(merged("read+write=10MiB/s", "write=5MiB/s", why) == "read=10MiB/s,write=5MiB/s");
  CHECK(merged("write=10MiB/s", "write=5MiB/s", why) == "write=5MiB/s");
  CHECK(merged("write=10MiB/s,openat=2.5/s", "read=1MiB/s", why) == "write=10MiB/s,openat=2.5/s,read=1MiB/s");
  CHECK(merged("write=10MiB/s:fd=file", "writes=1MiB/s:fd=socket", why) ==
        "write=10MiB/s:fd=file,writes=1MiB/s:fd=socket");
  CHECK(merged("read+write=10MiB/s", "write=5MiB/s:fd=socket", why) == "refused");
  CHECK(why.find("not one rule") != std::string::npos);
}
