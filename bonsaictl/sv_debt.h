// SPDX-License-Identifier: MIT
// A supervised thread's debts: units it owes its buckets and has not taken yet. One call
// may owe far more than a bucket takes at once (a 1 GiB write: the library would have
// cut it up, the supervisor cannot), so debt is taken in pieces (~100 ms of rate), each
// when the last is paid. Units that have moved already (a read settled at the thread's
// next call) are "late": they are taken first and as late charges, so that the library's
// threads asleep in the same service bucket wait them off too (bucket_take_late). Pure:
// no buckets, no clock (the supervisor's loop does the taking).
#pragma once
#include <cstdint>

#include "abi/limits_abi.h"

namespace bonsai::ctl {

struct Debt {
  uint8_t bucket = kNoBucket;
  uint64_t units = 0;
  uint64_t late = 0;  // of units: what has moved already
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

}  // namespace bonsai::ctl
