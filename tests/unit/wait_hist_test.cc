// SPDX-License-Identifier: MIT
// The wait histogram: bucket bounds (10 us x 4^k, then +Inf), the bucket of a wait,
// and the quantiles `stat` reports from it.
#include <catch2/catch.hpp>

#include "stat/stat_snapshot.h"
#include "abi/wait_hist.h"

using namespace bonsai;

TEST_CASE("wait_hist: a wait falls in the first bucket whose bound holds it") {
  CHECK(wait_bucket(0) == 0);
  CHECK(wait_bucket(10'000) == 0);
  CHECK(wait_bucket(10'001) == 1);
  CHECK(wait_bucket(40'000) == 1);
  CHECK(wait_bucket(40'001) == 2);
  for (unsigned k = 0; k + 1 < kWaitBuckets; ++k) {
    CHECK(wait_bucket(wait_bucket_le_ns(k)) == k);
    CHECK(wait_bucket(wait_bucket_le_ns(k) + 1) == k + 1);
  }
  CHECK(wait_bucket_le_ns(kWaitBuckets - 2) == 10'000ull << 20);  // ~10.5 s
  CHECK(wait_bucket(UINT64_MAX) == kWaitBuckets - 1);
  CHECK(wait_bucket_le_ns(kWaitBuckets - 1) == UINT64_MAX);
  WaitHist h{};
  wait_hist_add(&h, CallId::write, 30'000'000);
  wait_hist_add(nullptr, CallId::write, 1);  // not attached: nothing
  CHECK(h.count[static_cast<unsigned>(CallId::write)][wait_bucket(30'000'000)].load() == 1);
}

TEST_CASE("wait_hist: quantiles interpolate within a bucket") {
  std::array<uint64_t, kWaitBuckets> hist{};
  CHECK(bonsai::ctl::wait_quantile_ns(hist, 0.5) == 0);
  hist[1] = 100;  // all between 10 and 40 us
  uint64_t p50 = bonsai::ctl::wait_quantile_ns(hist, 0.5);
  CHECK(p50 > 10'000);
  CHECK(p50 <= 40'000);
  CHECK(bonsai::ctl::wait_quantile_ns(hist, 0.99) <= 40'000);
  hist[kWaitBuckets - 1] = 1000;  // most beyond 10.5 s: the quantile answers the bound
  CHECK(bonsai::ctl::wait_quantile_ns(hist, 0.99) == wait_bucket_le_ns(kWaitBuckets - 2));
}
