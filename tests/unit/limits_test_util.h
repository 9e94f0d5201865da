// SPDX-License-Identifier: MIT
// Limit sets and views from the limit language, for the limiter's unit tests.
#pragma once
#include <catch2/catch.hpp>

#include "abi/limit_parse.h"
#include "bucket/limits_view.h"

namespace bonsai::test {

inline LimitSet limits_of(const char* text) {
  LimitSet set{};
  ParseError err{};
  REQUIRE(limit_parse(text, set, err));
  return set;
}

inline LimitsView view_of(const char* text) {
  LimitsView v{};
  REQUIRE(limits_view_build(limits_of(text), v));
  return v;
}

}  // namespace bonsai::test
