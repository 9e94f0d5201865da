// SPDX-License-Identifier: MIT
// sys/div128.h: the 128-by-64 division that replaces libgcc's __udivti3, against the
// compiler's own 128-bit arithmetic.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "sys/div128.h"

using bonsai::div128;
using bonsai::mul_div_sat;

namespace {
using u128 = unsigned __int128;
}

TEST_CASE("div128 agrees with 128-bit division whenever the quotient fits", "[div128]") {
  std::mt19937_64 rng(34);
  for (int i = 0; i < 200000; ++i) {
    uint64_t d = rng() >> (rng() % 64);
    if (d == 0) d = 1;
    uint64_t hi = rng() % d;  // hi < d: the quotient fits
    uint64_t lo = rng();
    uint64_t q = 0;
    REQUIRE(div128(hi, lo, d, q));
    REQUIRE(q == static_cast<uint64_t>(((static_cast<u128>(hi) << 64) | lo) / d));
  }
}

TEST_CASE("div128 refuses a zero divisor and quotients past 64 bits", "[div128]") {
  uint64_t q = 7;
  CHECK_FALSE(div128(0, 5, 0, q));
  CHECK_FALSE(div128(1, 0, 1, q));          // 2^64 / 1
  CHECK_FALSE(div128(UINT64_MAX, 0, UINT64_MAX, q));
  CHECK(q == 7);  // untouched
  REQUIRE(div128(UINT64_MAX - 1, UINT64_MAX, UINT64_MAX, q));
  CHECK(q == UINT64_MAX);  // (2^128 - 2^64 - 1) / (2^64 - 1): the largest quotient that fits
}

TEST_CASE("mul_div_sat is a*b/c rounded down, saturated", "[div128]") {
  CHECK(mul_div_sat(0, 123, 7) == 0);
  CHECK(mul_div_sat(1'000'000'000, 10'000'000, 1'000'000'000) == 10'000'000);
  CHECK(mul_div_sat(UINT64_MAX, UINT64_MAX, UINT64_MAX) == UINT64_MAX);
  CHECK(mul_div_sat(UINT64_MAX, 2, 1) == UINT64_MAX);  // does not fit
  CHECK(mul_div_sat(5, 5, 0) == UINT64_MAX);
  std::mt19937_64 rng(340);
  for (int i = 0; i < 100000; ++i) {
    uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64), c = (rng() >> (rng() % 64)) | 1;
    u128 want = static_cast<u128>(a) * b / c;
    CHECK(mul_div_sat(a, b, c) == (want > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(want)));
  }
}
