// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/bucket/limits_carry: a bucket's state across a limit change --
// the same limit (nothing moves), a raised and a lowered rate (debt and credit kept in
// units), a smaller depth (credit clipped), rules added (no burst) and removed (freed),
// renumbered rules (state follows the rule), garbage clocks.
#include <catch2/catch.hpp>

#include "bucket/limits_carry.h"

#include "limits_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

namespace {

constexpr uint64_t kNow = 100'000'000'000;  // 100 s
constexpr uint64_t kMs = 1'000'000;

}  // namespace

TEST_CASE("limits_carry: the same limit again changes nothing", "[limits_carry]") {
  LimitsView a = view_of("write=4MiB/s,read=1MiB/s:burst=64KiB");
  LimitsView b = view_of("write=4MiB/s,read=1MiB/s:burst=64KiB");
  BucketState s[kMaxRules]{};
  s[0].tat_ns.store(kNow + 500 * kMs);  // in debt
  s[1].tat_ns.store(kNow + 3 * kMs);    // some burst spent
  s[0].late_ns.store(77);
  buckets_carry(a, s, b, s, kNow);
  CHECK(s[0].tat_ns.load() == kNow + 500 * kMs);
  CHECK(s[1].tat_ns.load() == kNow + 3 * kMs);
  CHECK(s[0].late_ns.load() == 77);
  CHECK(limits_same_rules(a.set, b.set));
}

TEST_CASE("limits_carry: a new rate keeps the debt in units", "[limits_carry]") {
  LimitsView at4 = view_of("write=4MB/s");  // 250 ns a byte, depth 10 ms = 40,000 B
  LimitsView at8 = view_of("write=8MB/s");  // 125 ns a byte, depth 10 ms = 80,000 B
  LimitsView at2 = view_of("write=2MB/s");
  const BucketParams &p4 = at4.params[0], &p8 = at8.params[0], &p2 = at2.params[0];
  // 400,000 B taken ahead of now at 4 MB/s: 100 ms, of which 10 ms is the depth (40,000 B)
  // and 360,000 B debt.
  uint64_t tat = kNow + 100 * kMs;
  SECTION("raised: the debt is paid at the new rate, the whole new depth before it") {
    uint64_t t8 = bucket_carry_tat(tat, p4, p8, kNow);
    // 80,000 + 360,000 B at 125 ns = 55 ms
    CHECK(t8 == kNow + 55 * kMs);
    CHECK(bucket_eligible(p8, t8, kNow, 0) == kNow + 45 * kMs);  // the debt's 360,000 B at 8 MB/s
  }
  SECTION("lowered: the wait grows") {
    uint64_t t2 = bucket_carry_tat(tat, p4, p2, kNow);  // 20,000 + 360,000 B at 500 ns = 190 ms
    CHECK(t2 == kNow + 190 * kMs);
    CHECK(bucket_eligible(p2, t2, kNow, 0) == kNow + 180 * kMs);
  }
  SECTION("back and forth: nothing is given away") {
    uint64_t t = tat;
    for (int i = 0; i < 100; ++i) t = bucket_carry_tat(bucket_carry_tat(t, p4, p8, kNow), p8, p4, kNow);
    CHECK(t >= tat - 1000);  // rounding only, never a give-away of more than a few ns
    CHECK(t <= tat + 1000);
  }
}

TEST_CASE("limits_carry: credit is kept in units and clipped to a smaller depth", "[limits_carry]") {
  LimitsView big = view_of("write=1MB/s:burst=100KB");   // depth 100 ms
  LimitsView small = view_of("write=1MB/s:burst=20KB");  // depth 20 ms
  LimitsView fast = view_of("write=2MB/s:burst=100KB");  // depth 50 ms
  // 30,000 B of burst spent: 70,000 B still free.
  uint64_t tat = kNow + 30 * kMs;
  CHECK(bucket_carry_tat(tat, big.params[0], small.params[0], kNow) == kNow);  // 70,000 free > 20,000: full
  // Same depth in bytes, double rate: 30,000 B spent at 500 ns = 15 ms.
  CHECK(bucket_carry_tat(tat, big.params[0], fast.params[0], kNow) == kNow + 15 * kMs);
  // A full bucket stays full; a garbage clock is forgotten.
  CHECK(bucket_carry_tat(kNow - 5, big.params[0], small.params[0], kNow) == kNow - 5);
  CHECK(bucket_carry_tat(kNow + big.params[0].max_ahead_ns + 1, big.params[0], small.params[0], kNow) == 0);
}

TEST_CASE("limits_carry: rules added start without burst, removed ones are freed, state follows its rule",
          "[limits_carry]") {
  LimitsView a = view_of("write=4MB/s,read=1MB/s");
  LimitsView b = view_of("openat=100/s,read=1MB/s");  // write removed, openat added, read moved 1 -> 1
  LimitsView c = view_of("read=1MB/s,write=4MB/s");   // renumbered
  BucketState s[kMaxRules]{};
  s[0].tat_ns.store(kNow + 7 * kMs);
  s[1].tat_ns.store(kNow + 9 * kMs);
  SECTION("added and removed") {
    buckets_carry(a, s, b, s, kNow);
    CHECK(s[0].tat_ns.load() == kNow + b.params[0].depth_ns);  // openat: empty of burst
    CHECK(s[1].tat_ns.load() == kNow + 9 * kMs);               // read: kept
  }
  SECTION("renumbered") {
    buckets_carry(a, s, c, s, kNow);
    CHECK(s[0].tat_ns.load() == kNow + 9 * kMs);  // read
    CHECK(s[1].tat_ns.load() == kNow + 7 * kMs);  // write
    CHECK_FALSE(limits_same_rules(a.set, c.set));
  }
  SECTION("fewer rules: the buckets past them are freed") {
    LimitsView d = view_of("write=4MB/s");
    buckets_carry(a, s, d, s, kNow);
    CHECK(s[0].tat_ns.load() == kNow + 7 * kMs);
    CHECK(s[1].tat_ns.load() == 0);
  }
  SECTION("from no limits: fresh buckets, as at start") {
    LimitsView none{};
    BucketState t[kMaxRules]{};
    buckets_carry(none, t, a, t, kNow);
    CHECK(t[0].tat_ns.load() == 0);
  }
}

TEST_CASE("limits_carry: a unit or fd change is a new rule", "[limits_carry]") {
  LimitsView a = view_of("write=4MB/s");
  LimitsView b = view_of("write=4MB/s:fd=socket");
  LimitsView c = view_of("write=100/s");
  uint8_t from[kMaxRules];
  limits_match(a.set, b.set, from);
  CHECK(from[0] == kNoBucket);
  limits_match(a.set, c.set, from);
  CHECK(from[0] == kNoBucket);
  limits_match(a.set, a.set, from);
  CHECK(from[0] == 0);
}
