// SPDX-License-Identifier: MIT
// Debts owed a bucket (bucket/debt.h): what moved already is taken first and as a late charge,
// forgetting a write's unused prepayment never forgets what moved, pieces are bounded.
#include <catch2/catch.hpp>

#include "bucket/debt.h"
#include "token_bucket_sim.h"

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

TEST_CASE("debt: under shares a piece goes through share_take, with the library's starvation guard", "[debt]") {
  using namespace bonsai::test;
  Rule r = rule_of(10'000'000);  // 100 ns a byte: a piece (100 batches) is 1,000,000 bytes, 100 ms
  r.ceil = 40'000'000;
  r.host1 = 1;
  ShareParams p{};
  REQUIRE(share_params(r, rule_of(100'000'000), p));
  uint64_t now = kUptime;
  {  // The rate spent, the host idle: a piece is borrowed at once.
    BucketState own{}, host{};
    own.tat_ns.store(now + 9'500'000);
    Debt d{0, 300'000, 100'000};
    uint64_t taken = 0;
    CHECK(debt_share_piece(d, own, host, p, now, kDebtNs, &taken) == ShareWay::Borrow);
    CHECK(taken == 300'000);
    CHECK((d.units == 0 && d.late == 0 && !d.share_wait));
    CHECK(own.tat_ns.load() == now + 9'500'000);
    CHECK(host.tat_ns.load() == now + bucket_cost_ns(p.host, 300'000));
  }
  {  // A rate and a host kept busy by the library's threads: the piece (more than the depth)
     // never finds them idle; after kShareRounds rounds it is taken from the rate.
    BucketState own{}, host{};
    auto others = [&](uint64_t at) {
      clock_take(own.tat_ns, p.rate, 10'000, at);
      clock_take(host.tat_ns, p.host, 10'000, at);
    };
    Debt d{0, 2'500'000, 0};
    uint64_t taken = 0;
    others(now);
    uint32_t tries = 0;
    ShareWay way = ShareWay::Wait;
    while (tries < 100 && (way = debt_share_piece(d, own, host, p, now, kDebtNs, &taken)) == ShareWay::Wait) {
      CHECK(d.share_wait);
      CHECK(d.share_at > now);
      CHECK(d.units == 2'500'000);
      now = d.share_at;
      others(now);
      ++tries;
    }
    CHECK(tries == kShareRounds);
    CHECK(way == ShareWay::Rate);
    CHECK(taken == 1'000'000);
    CHECK((d.units == 1'500'000 && !d.share_wait));
    CHECK(d.share_at > now);  // it waits out the rate
    // The next piece starts afresh: its own rounds.
    CHECK(debt_share_piece(d, own, host, p, now, kDebtNs, &taken) == ShareWay::Wait);
    CHECK(d.share_step.rounds == 1);
  }
}
