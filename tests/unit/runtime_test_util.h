// SPDX-License-Identifier: MIT
// The limiter of a unit-test process: set up once (no BONSAI_* variables: unlimited, its
// own buckets), then each test installs the limits it needs on fresh buckets.
#pragma once
#include "limits_test_util.h"
#include "runtime/limiter_install.h"
#include "runtime/limiter_setup.h"
#include "runtime/limiter_state.h"

namespace bonsai::test {

inline void limiter_fresh(const char* limits) {
  REQUIRE(limiter_init_once());
  limiter_uninstall();
  for (uint32_t b = 0; b < kMaxRules; ++b) bucket_reset_clock(g_limiter.buckets[b]);
  REQUIRE(limiter_install(limits_of(limits)));
}

}  // namespace bonsai::test
