// SPDX-License-Identifier: MIT
// Shares: HTB's semantics on the GCRA clocks of token_bucket.h. A rule has a
// guaranteed rate (its own bucket, as without shares) and a ceiling (a second clock in
// the same BucketState, ceil_tat_ns, at the ceil rate); the host has one bucket per call
// set at its capacity (abi/host_abi.h), which every taker charges. A refill:
//   1. charges the ceiling clock; a ceiling in debt beyond its depth holds the units;
//   2. if the rule's own rate lets them go, takes them there and charges the host;
//   3. else, if the host has spare capacity, borrows them from the host;
//   4. else waits until the earlier of the two could let them go, and tries 2-3 again;
//      after kShareRounds rounds of it, takes them from the rate whatever it says (5.).
// Guarantees hold because step 2 never asks the host: a busy borrower only pushes the
// host into debt, which stops borrowing, not the rates. At most 3 read-modify-writes per
// refill (ceiling, rate, host; or ceiling, host, the borrowed count). Used by the library
// and by the supervisor alike. Pure: no syscalls, no allocation.
#pragma once
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"
#include "bucket/token_bucket.h"

namespace bonsai {

// The three buckets' parameters of a sharing rule.
struct ShareParams {
  BucketParams rate;  // the rule's own (guaranteed) bucket
  BucketParams ceil;  // the rule at its ceiling: the rate `ceil`, the depth the rule's
  BucketParams host;  // the host capacity rule's
};

// Builds them from the rule and its host capacity rule. @return false if the rule does
// not share (no ceiling above its rate) or the capacity rule is unusable (rate 0, above
// kMaxRate, another unit): the rule is then held to its rate alone.
bool share_params(const Rule& rule, const Rule& capacity, ShareParams& out) noexcept;

// Takes the host never saw (a container's processes cannot reach the host segment and
// publish them in their own service's segment instead, ShmLimits::nohost_taken) are not
// lendable. The rate (units/s) to hold back for one service: what its counter moved from
// `before` to `after` over `elapsed_ns`, at most `guaranteed` (the service's own rate for
// that capacity, units/s): a forged counter holds back at most the guarantee the service
// has anyway, never more; one going backwards holds back nothing (its loss alone).
uint64_t share_reserved_rate(uint64_t before, uint64_t after, uint64_t elapsed_ns, uint64_t guaranteed) noexcept;

// The capacity a borrower's host bucket runs at with `reserved` units/s held back: never
// below a sixteenth of it (the host's own takers charge at this rate, so a rate near 0
// would push the host's clock far ahead and stop borrowing long after the containers stop).
uint64_t share_host_rate(uint64_t capacity, uint64_t reserved) noexcept;
inline constexpr uint64_t kShareHostFloorDiv = 16;

enum class ShareWay : uint8_t { Rate, Borrow, Wait };

struct ShareStep {
  ShareWay way;
  uint64_t ceil_at;     // when the ceiling lets the units go (0: now)
  uint64_t go_at;       // Rate/Borrow: when the units may go (0: now; >= ceil_at);
                        // Wait: when to try again (the earlier of rate and host)
  uint32_t rounds = 0;  // Wait: rounds of it so far for these units
};

// The starvation guard: rounds of Wait after which a taker commits to its own rate. A
// rate and a host kept busy by others (takers of a batch each, as the library's threads)
// may never have room for these units when they try, least of all units costing more than
// the depth (they go on an idle clock only: a supervised call's debt is taken in pieces
// of ~100 ms): charged to the rate whatever it says, they then wait it out, as without
// shares, behind the takes already made and ahead of those to come.
inline constexpr uint32_t kShareRounds = 16;

// One refill of `units` on the rule's state `own` and the host's `host` at `now`.
// `retry`: the Wait step an earlier call returned for these same units (their ceiling is
// charged: its time is carried over; a retry at or after its go_at is one more round), or
// nullptr for a first try. A retry after kShareRounds rounds takes them from the rate
// (and charges the host) whatever either says: Rate, go_at when the rate lets them go.
// The library's refill (runtime/share_wait.cc) and the supervisor's debt (bucket/debt.h:
// debt_share_piece) both retry through it: one guard for both.
ShareStep share_take(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units, uint64_t now,
                     uint64_t slack, const ShareStep* retry) noexcept;

// Units that already moved (a read's bytes beyond the thread's credit): the ceiling
// charged; the rate if it has room (and the host), else the host (borrowed, into debt if
// it must: they moved). Never waits. @return Rate or Borrow.
ShareWay share_take_late(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units,
                         uint64_t now) noexcept;

// A call that must not wait (a non-blocking descriptor): borrows `units` from the host
// only if the host and the ceiling both let them go now (else takes nothing). Two
// CAS loops, a third to give the host back its units when the ceiling says no.
// @return true if borrowed.
bool share_borrow_now(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units,
                      uint64_t now) noexcept;

}  // namespace bonsai
