// SPDX-License-Identifier: MIT
// A supervised thread's debts: what moved already is taken first and as a late charge,
// forgetting a write's unused prepayment never forgets what moved, pieces are bounded.
#include <catch2/catch.hpp>

#include "../../bonsaictl/sv_debt.h"

using namespace bonsai;
using namespace bonsai::ctl;

TEST_CASE("sv_debt: what moved already is taken first, as a late charge", "[sv_debt]") {
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

TEST_CASE("sv_debt: forgetting a prepayment forgets what has not moved first", "[sv_debt]") {
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

TEST_CASE("sv_debt: buckets get their own slots; a zero piece still moves; clear drops all", "[sv_debt]") {
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
