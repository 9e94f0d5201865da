// SPDX-License-Identifier: MIT
// Units owed a bucket, taken in pieces (see debt.h).
#include "bucket/debt.h"

#include <algorithm>

namespace bonsai {

void DebtList::add(uint8_t bucket, uint64_t units, bool late) noexcept {
  if (bucket == kNoBucket || !units) return;
  Debt* free_slot = nullptr;
  for (Debt& d : slot) {
    if (d.units && d.bucket == bucket) {
      d.units += units;
      if (late) d.late += units;
      return;
    }
    if (!d.units && !free_slot) free_slot = &d;
  }
  if (!free_slot) free_slot = &slot[0];  // more buckets than slots: cannot happen (see kSlots)
  if (free_slot->bucket != bucket) *free_slot = Debt{};
  free_slot->bucket = bucket;
  free_slot->units += units;
  if (late) free_slot->late += units;
}

uint64_t DebtList::forget(uint8_t bucket, uint64_t units) noexcept {
  for (Debt& d : slot)
    if (d.units && d.bucket == bucket) {
      uint64_t k = std::min(units, d.units);
      d.units -= k;
      units -= k;
      d.late = std::min(d.late, d.units);  // what has not moved goes first
    }
  return units;
}

void DebtList::clear() noexcept {
  for (Debt& d : slot) d = Debt{};
}

bool DebtList::owes(uint8_t bucket) const noexcept {
  for (const Debt& d : slot)
    if (d.units && d.bucket == bucket) return true;
  return false;
}

DebtList::Piece DebtList::next_piece(Debt& d, uint64_t piece) noexcept {
  uint64_t k = std::min(d.units, std::max<uint64_t>(piece, 1));
  uint64_t late = std::min(k, d.late);
  d.units -= k;
  d.late -= late;
  return {late, k - late};
}

namespace {

uint64_t piece_units(const BucketParams& p) noexcept { return static_cast<uint64_t>(p.batch) * 100; }  // batches: ~1 ms

}  // namespace

uint64_t debt_take_piece(Debt& d, BucketState& s, const BucketParams& p, uint64_t now_ns) noexcept {
  DebtList::Piece piece = DebtList::next_piece(d, piece_units(p));
  if (piece.late) bucket_take_late(s, p, piece.late, now_ns);
  if (piece.fresh) bucket_take(s, p, piece.fresh, now_ns);
  return piece.late + piece.fresh;
}

ShareWay debt_share_piece(Debt& d, BucketState& own, BucketState& host, const ShareParams& p, uint64_t now_ns,
                          uint64_t slack, uint64_t* taken) noexcept {
  uint64_t units = std::min(d.units, std::max<uint64_t>(piece_units(p.rate), 1));
  ShareStep st = share_take(own, host, p, units, now_ns, slack, d.share_wait ? &d.share_step : nullptr);
  *taken = 0;
  d.share_wait = st.way == ShareWay::Wait;
  d.share_step = st;
  if (d.share_wait) {
    d.share_at = std::max(st.go_at, st.ceil_at);
    return st.way;
  }
  d.share_at = st.go_at;
  DebtList::next_piece(d, units);  // off the debt, what moved first (the rate or the host took it all)
  *taken = units;
  return st.way;
}

}  // namespace bonsai
