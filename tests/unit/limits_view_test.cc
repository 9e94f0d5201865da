// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/bucket/limits_view: the view both limiters build (library and
// supervisor), the bucket a call is charged to, a call's units, and when a bucket lets a
// call go (a garbage clock holds nobody; a take that fits the depth goes at once).
#include <catch2/catch.hpp>

#include "bucket/limits_view.h"
#include "bucket/pace_step.h"

#include "limits_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

TEST_CASE("limits_view: built from a set, a bucket per rule, parameters per bucket", "[limits_view]") {
  LimitsView v = view_of("write=1MiB/s,read+pread=2MiB/s,openat=100/s");
  REQUIRE(v.set.count == 3);
  CHECK_FALSE(v.table.fd_sensitive);
  CHECK(view_bucket(v, CallId::write, FdKind::None) == 0);
  CHECK(view_bucket(v, CallId::read, FdKind::File) == 1);
  CHECK(view_bucket(v, CallId::pread, FdKind::Pipe) == 1);
  CHECK(view_bucket(v, CallId::openat, FdKind::None) == 2);
  CHECK(view_bucket(v, CallId::send, FdKind::Socket) == kNoBucket);
  for (uint32_t r = 0; r < v.set.count; ++r) {
    BucketParams p = bucket_params(v.set.rules[r]);
    CHECK(v.params[r].ns_per_unit_q32 == p.ns_per_unit_q32);
    CHECK(v.params[r].depth_ns == p.depth_ns);
    CHECK(v.params[r].per_call == p.per_call);
  }
  CHECK(v.params[2].per_call);
}

TEST_CASE("limits_view: fd-sensitive rules look at the descriptor's kind", "[limits_view]") {
  LimitsView v = view_of("write=1MiB/s:fd=socket,write=4MiB/s:fd=file");
  CHECK(v.table.fd_sensitive);
  CHECK(view_bucket(v, CallId::write, FdKind::Socket) == 0);
  CHECK(view_bucket(v, CallId::write, FdKind::File) == 1);
  CHECK(view_bucket(v, CallId::write, FdKind::Pipe) == kNoBucket);
  CHECK(view_bucket(v, CallId::write, FdKind::None) == kNoBucket);
}

TEST_CASE("limits_view: two rules on one call make no view; too many rules are cut", "[limits_view]") {
  LimitSet set{};
  set.count = 2;
  for (auto& r : set.rules) {
    r.calls = call_bit(CallId::write);
    r.rate = 1000;
    r.unit = RateUnit::Bytes;
    r.fd_mask = kAnyFd;
  }
  LimitsView v{};
  CHECK_FALSE(limits_view_build(set, v));
  set.count = 1000;  // untrusted: past kMaxRules
  CHECK_FALSE(limits_view_build(set, v));
  CHECK(v.set.count == kMaxRules);
}

TEST_CASE("limits_view: a call costs its bytes, or one call; a failed call costs nothing", "[limits_view]") {
  LimitsView v = view_of("write=1MiB/s,openat=100/s");
  CHECK(call_units(v.params[0], 4096) == 4096);
  CHECK(call_units(v.params[0], 0) == 0);
  CHECK(call_units(v.params[0], -1) == 0);
  CHECK(call_units(v.params[1], -1) == 1);  // a call-rate bucket counts the attempt
  CHECK(call_units(v.params[1], 0) == 1);
}

TEST_CASE("limits_view: when a bucket lets a call go", "[limits_view]") {
  LimitsView v = view_of("write=1GB/s:burst=10MB");  // 1 ns a byte, a 10 ms depth
  const BucketParams& p = v.params[0];
  REQUIRE(p.depth_ns == 10'000'000);
  BucketState s{};
  const uint64_t now = 5'000'000'000;
  CHECK(pace_queue_when(s, p, now, kDefaultSlackNs) == 0);                        // idle
  CHECK(bucket_take_due(s, p, 8'000'000, now, kDefaultSlackNs) == 0);        // within the depth
  CHECK(bucket_take_due(s, p, 8'000'000, now, kDefaultSlackNs) == now + 6'000'000 + kDefaultSlackNs);
  CHECK(pace_queue_when(s, p, now, kDefaultSlackNs) == now + 6'000'000 + kDefaultSlackNs);
  CHECK(pace_queue_when(s, p, now + 6'000'000, kDefaultSlackNs) == 0);            // paid down to the depth
  s.tat_ns.store(now + p.max_ahead_ns + 1);                                  // garbage: holds nobody
  CHECK(pace_queue_when(s, p, now, kDefaultSlackNs) == 0);
  CHECK(bucket_take_due(s, p, 1000, now, kDefaultSlackNs) == 0);             // and is forgotten
  CHECK(s.tat_ns.load() == now + 1000);
}

TEST_CASE("limits_view: renumbered buckets start afresh", "[limits_view]") {
  BucketState s[3]{};
  for (auto& b : s) b.tat_ns.store(123);
  buckets_renumbered(s, 3);
  for (auto& b : s) CHECK(b.tat_ns.load() == 0);
}
