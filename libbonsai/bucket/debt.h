// SPDX-License-Identifier: MIT
// Units a caller owes its buckets and has not taken yet, taken in pieces. One call may
// owe far more than a bucket takes at once (a 1 GiB write the supervisor could not cut
// up, as the library cuts a transfer into chunks), so debt is taken in pieces of ~100 ms
// of rate, each when the last is paid. Units that have moved already (a read settled
// after it) are "late": taken first and with bucket_take_late, so that the sleepers
// queued in the same bucket wait them off too. Under a sharing rule a piece goes through
// the library's refill instead (share_take: the ceiling, the rate, the host, and its
// starvation guard). Used by bonsaictl's supervisor for each supervised thread. No clock,
// no allocation.
#pragma once
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"
#include "bucket/share.h"
#include "bucket/token_bucket.h"

namespace bonsai {

struct Debt {
  uint8_t bucket = kNoBucket;
  uint64_t units = 0;
  uint64_t late = 0;  // of units: what has moved already
  // Shares (bucket/share.h): a piece waiting for its rate or the host, and its last step
  // (handed back to share_take: its ceiling is charged, its rounds counted); when the last
  // piece may go, or may try again.
  bool share_wait = false;
  ShareStep share_step{};
  uint64_t share_at = 0;
};

struct DebtList {
  static constexpr int kSlots = 4;  // a call charges at most 2 buckets; settled + new call: 4
  Debt slot[kSlots]{};

  // Adds `units` owed to `bucket` (`late`: they have moved already).
  void add(uint8_t bucket, uint64_t units, bool late) noexcept;
  // Forgets up to `units` owed to `bucket` and not taken yet (a write that moved less
  // than it prepaid), what has not moved first. @return the units it did not owe.
  uint64_t forget(uint8_t bucket, uint64_t units) noexcept;
  // Everything dropped (the limits were renumbered).
  void clear() noexcept;
  bool owes(uint8_t bucket) const noexcept;

  // The next piece of one debt: at most `piece` units, what moved first.
  struct Piece {
    uint64_t late;   // to take with bucket_take_late
    uint64_t fresh;  // to take with bucket_take
  };
  // Takes the next piece of `d` off it.
  static Piece next_piece(Debt& d, uint64_t piece) noexcept;
};

// Takes the next piece of `d` (~100 ms of the bucket's rate) from the bucket `s` at
// `now_ns`. @return the units taken.
uint64_t debt_take_piece(Debt& d, BucketState& s, const BucketParams& p, uint64_t now_ns) noexcept;

// Takes the next piece of `d` under a sharing rule: share_take on the rule's state `own`
// and its host's `host`, a piece that waited handing back its step, so that it waits no
// more rounds than the library's refill (kShareRounds, then its own rate whatever
// borrowers do). Sets d.share_at. @return the way it went (Wait: nothing taken yet),
// `*taken` the units taken (borrowed, for Borrow).
ShareWay debt_share_piece(Debt& d, BucketState& own, BucketState& host, const ShareParams& p, uint64_t now_ns,
                          uint64_t slack, uint64_t* taken) noexcept;

}  // namespace bonsai
