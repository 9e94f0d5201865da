// SPDX-License-Identifier: MIT
// Charging supervised calls. The arithmetic is the library's (bucket/limits_view.h:
// a call's units, when a bucket lets a call go; bucket/debt.h: owed units taken in
// pieces); what is the supervisor's own is when it learns what a call moved: at the
// thread's next notification, from its I/O counters (settle), so a write prepays what
// it asks and gets back what it did not move, and a read reserves one chunk before it
// goes and is given back what it did not move, or charged late what it moved beyond.
#include <algorithm>

#include "supervisor/sv_loop.h"
#include "sys/clock.h"
#include "sys/lane_add.h"

namespace bonsai::ctl {

BucketState& Loop::state(Proc& p, uint8_t bucket) {
  ShmSegment& s = seg_.seg();
  if (s.header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
    return s.buckets[bucket];
  return p.own[bucket];
}

void Loop::charge(Thread& th, uint8_t bucket, uint64_t moved, bool late) {
  const BucketParams* bp = view_.params(bucket);
  if (!bp) return;
  th.debt.add(bucket, call_units(*bp, static_cast<int64_t>(std::min<uint64_t>(moved, INT64_MAX))), late);
}

void Loop::give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now) {
  const BucketParams* bp = view_.params(bucket);
  if (!bp) return;
  units = th.debt.forget(bucket, units);  // not taken yet: forgotten first
  if (units) bucket_give_back(state(p, bucket), *bp, units, now);
}

namespace {

// Whether a piece may be taken from `s` now (see Loop::pay).
bool piece_room(const BucketState& s, const BucketParams& p, uint64_t now, bool wait) {
  if (wait) return bucket_due(s, p, now, kDefaultSlackNs) == 0;
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  return tat <= now || tat - now <= p.max_ahead_ns / 2;
}

}  // namespace

void Loop::pay(Thread& th, Proc& p, uint64_t now, bool wait) {
  for (Debt& d : th.debt.slot) {
    if (!d.units) continue;
    const BucketParams* bp = view_.params(d.bucket);
    if (!bp) {
      d = Debt{};
      continue;
    }
    if (share_pay(th, p, d, now)) continue;  // shares wait in their own steps (share_at)
    BucketState& s = state(p, d.bucket);
    if (!piece_room(s, *bp, now, wait)) continue;
    uint8_t b = d.bucket;
    debt_take_piece(d, s, *bp, now);
    Place* at = nullptr;
    for (Place& pl : th.place)
      if (pl.bucket == b || (!at && pl.bucket == kNoBucket)) at = &pl;
    if (at) *at = Place{b, s.tat_ns.load(std::memory_order_relaxed)};
  }
}

void Loop::orphan_debt(Thread& th) {
  for (Debt& d : th.debt.slot)
    if (d.units && view_.params(d.bucket)) orphans_.push_back(Orphan{th.tgid, d});
  th.debt.clear();
}

uint64_t Loop::pay_orphans(uint64_t now) {
  uint64_t wake = 0;
  bool service = seg_.seg().header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service);
  for (size_t i = 0; i < orphans_.size();) {
    Debt& d = orphans_[i].debt;
    const BucketParams* bp = view_.params(d.bucket);
    auto pit = procs_.find(orphans_[i].tgid);
    // A process's own buckets end with it; a service's outlive its threads. Under a
    // sharing rule an orphan is taken at its rate (its borrowing ended with its thread).
    BucketState* s = !bp ? nullptr : service ? &seg_.seg().buckets[d.bucket] : pit != procs_.end() ? &pit->second.own[d.bucket] : nullptr;
    if (s) {
      for (int round = 0; round < 64 && d.units && piece_room(*s, *bp, now, true); ++round)
        debt_take_piece(d, *s, *bp, now);
      if (d.units) {
        uint64_t due = bucket_due(*s, *bp, now, kDefaultSlackNs);
        if (!due) due = now + 1'000'000;
        if (!wake || due < wake) wake = due;
        ++i;
        continue;
      }
    }
    orphans_[i] = orphans_.back();
    orphans_.pop_back();
  }
  return wake;
}

// When the call may go: its buckets' debt paid down to the depth, and nothing this
// thread owes them left untaken. Takes further pieces while the buckets allow them.
uint64_t Loop::hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now) {
  for (int round = 0; round < 64; ++round) {
    pay(th, p, now, true);
    uint64_t at = eligible_at(th, p, bucket, now);
    if (at) return at;
    if (!th.debt.owes(bucket[0]) && !th.debt.owes(bucket[1])) return 0;
  }
  return now + 1'000'000;  // a huge debt on an idle bucket: look again in 1 ms
}

uint64_t Loop::eligible_at(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now) {
  uint64_t at = 0;
  for (int i = 0; i < 2; ++i) {
    const BucketParams* bp = view_.params(bucket[i]);
    if (!bp) continue;
    if (view_.host1[bucket[i]]) {  // shares: a borrower's rate may be in debt; its steps say when
      for (const Debt& d : th.debt.slot)
        if (d.bucket == bucket[i] && d.share_at > now) at = std::max(at, d.share_at);
      continue;
    }
    // Owing: its next piece waits for the bucket. Paid: its place in the queue is due
    // (later takers do not hold it back). Charged nothing: the bucket's queue.
    const Place* pl = nullptr;
    for (const Place& x : th.place)
      if (x.bucket == bucket[i]) pl = &x;
    if (pl && !th.debt.owes(bucket[i]))
      at = std::max(at, pl->tat > now + bp->max_ahead_ns ? 0 : bucket_eligible(*bp, pl->tat, now, kDefaultSlackNs));
    else
      at = std::max(at, bucket_due(state(p, bucket[i]), *bp, now, kDefaultSlackNs));
  }
  return at;
}

void Loop::count(Proc& p, CallId call, uint64_t calls, uint64_t bytes) {
  if (!p.slot || call == CallId::count_) return;
  CallLane& cl = p.slot->counters.lanes[0].by_call[static_cast<size_t>(call)];  // the supervisor's lane
  if (calls) lane_add(cl.calls, calls);
  if (bytes) lane_add(cl.bytes, bytes);
}

void Loop::io_baseline(Thread& th) {
  if (th.io_now || th.io_fd < 0) return;
  SvIo io;
  if (sv_io_read(th.io_fd, io)) th.io = io;
  else if (!th.blind) th.blind = true, say_blind(th, "the I/O counters");
  th.io_now = true;
}

void Loop::settle(Thread& th, Proc& p, bool have_io, const SvIo& io) {
  Owed& o = th.owed;
  if (!o.active) return;
  o.active = false;
  // No counters: the size asked; unknown too, the most a call moves (never nothing).
  uint64_t moved = o.asked == UINT64_MAX ? kSvUnknownMax : o.asked;
  if (have_io) {
    if (o.moved == SvMoved::ReadChar) moved = io.rchar >= th.io.rchar ? io.rchar - th.io.rchar : 0;
    else moved = io.wchar >= th.io.wchar ? io.wchar - th.io.wchar : 0;
    moved = std::min(moved, o.asked);
  }
  settle_moved(th, p, o, moved);
}

void Loop::settle_moved(Thread& th, Proc& p, const Owed& o, uint64_t moved) {
  if (moved >= o.counted) count(p, o.call, 0, moved - o.counted);
  else count(p, o.call, 0, static_cast<uint64_t>(-static_cast<int64_t>(o.counted - moved)));  // sums are mod 2^64
  if (o.view_seq != view_.seq) return;  // unusable limits came meanwhile: not charged
  uint64_t now = mono_ns();
  for (uint8_t b : o.bucket) {
    const BucketParams* bp = view_.params(b);
    if (!bp) continue;
    if (bp->per_call) {  // one call: a prepaid write paid it when it went
      if (!o.prepaid && (o.moved == SvMoved::ReadChar || o.moved == SvMoved::WriteChar)) charge(th, b, 1, true);
    } else {
      SvSettle s = sv_settle(o.prepaid, moved);
      if (s.charge_late) charge(th, b, s.charge_late, true);
      if (s.give_back) give_back(th, p, b, s.give_back, now);
    }
  }
}

}  // namespace bonsai::ctl
