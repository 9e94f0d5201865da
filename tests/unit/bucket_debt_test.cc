// SPDX-License-Identifier: MIT
// Debts owed a bucket (bucket/debt.h): what moved already is taken first and as a late charge,
// forgetting a write's unused prepayment never forgets what moved, pieces are bounded.
#include <catch2/catch.hpp>

#include "bucket/debt.h"

using namespace bonsai;

TEST_CASE("debt: what moved already is taken first, as a late charge", "[debt]") {
  DebtList l;
  l.add(3, 1000, false);  // a prepaid write
  l.add(3, 500, true);    // a read settled after it moved
  REQUIRE(l.owes(3));
  REQUIRE_FALSE(l.owes(4));
  Debt& d = l.slot[0];
  REQUIRE(d.bucket == 3);
  REQUIRE(d.units == 1500);
  REQUIRE(d.late == 500);
  auto p = DebtList::next_piece(d, 400);
  CHECK(p.late == 400);
  CHECK(p.fresh == 0);
  p = DebtList::next_piece(d, 400);
  CHECK(p.late == 100);
  CHECK(p.fresh == 300);
  p = DebtList::next_piece(d, 10'000);
  CHECK(p.late == 0);
  CHECK(p.fresh == 700);
  CHECK_FALSE(l.owes(3));
  p = DebtList::next_piece(d, 10'000);  // nothing left
  CHECK(p.late + p.fresh == 0);
}

TEST_CASE("debt: forgetting a prepayment forgets what has not moved first", "[debt]") {
  DebtList l;
  l.add(1, 600, true);
  l.add(1, 1000, false);
  CHECK(l.forget(1, 700) == 0);  // the write moved 300 of its 1000
  CHECK(l.slot[0].units == 900);
  CHECK(l.slot[0].late == 600);
  CHECK(l.forget(1, 2000) == 1100);  // more than owed: the rest goes back to the bucket
  CHECK(l.slot[0].units == 0);
  CHECK(l.slot[0].late == 0);
  CHECK(l.forget(2, 50) == 50);  // owed nothing there
}

TEST_CASE("debt: buckets get their own slots; a zero piece still moves; clear drops all", "[debt]") {
  DebtList l;
  l.add(kNoBucket, 100, true);  // no bucket: nothing owed
  l.add(0, 0, true);            // nothing: no slot
  CHECK_FALSE(l.owes(0));
  l.add(0, 10, true);
  l.add(1, 20, false);
  l.add(0, 5, false);
  CHECK(l.slot[0].bucket == 0);
  CHECK(l.slot[0].units == 15);
  CHECK(l.slot[0].late == 10);
  CHECK(l.slot[1].bucket == 1);
  auto p = DebtList::next_piece(l.slot[1], 0);  // a piece of 0 (rate below 1 unit/ms) takes 1
  CHECK(p.fresh == 1);
  l.clear();
  CHECK_FALSE(l.owes(0));
  CHECK_FALSE(l.owes(1));
  // Late never exceeds what is owed, whatever the order.
  l.add(2, 7, true);
  for (int i = 0; i < 7; ++i) {
    DebtList::next_piece(l.slot[0], 1);
    CHECK(l.slot[0].late <= l.slot[0].units);
  }
}

TEST_CASE("debt: a piece is ~100 ms of rate, what moved first, taken from the bucket", "[debt]") {
  Rule r{};
  r.calls = 1;
  r.rate = 1'000'000'000;  // 1 ns per byte: costs are exact; a batch is 1 ms = 1,000,000 bytes
  r.unit = RateUnit::Bytes;
  r.fd_mask = kAnyFd;
  BucketParams p = bucket_params(r);
  BucketState s{};
  Debt d{0, 250'000'000, 60'000'000};  // 250 ms owed, 60 ms of it moved already
  const uint64_t now = 1'000'000'000;
  CHECK(debt_take_piece(d, s, p, now) == 100'000'000);
  CHECK(s.tat_ns.load() == now + 100'000'000);
  CHECK(s.late_ns.load() == 60'000'000);  // the late part, queued sleepers wait it off
  CHECK(d.units == 150'000'000);
  CHECK(d.late == 0);
  CHECK(debt_take_piece(d, s, p, now) == 100'000'000);
  CHECK(debt_take_piece(d, s, p, now) == 50'000'000);
  CHECK(debt_take_piece(d, s, p, now) == 0);
  CHECK(s.tat_ns.load() == now + 250'000'000);
  CHECK(s.late_ns.load() == 60'000'000);
}
