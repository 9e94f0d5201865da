// SPDX-License-Identifier: MIT
// One take of a call that must not wait (see pace_step.h).
#include "bucket/pace_step.h"

namespace bonsai {
namespace {

// What the rate lets go or queues, charged to a sharing rule's ceiling and host.
void charge_share(BucketState& s, const PaceShare& share, uint64_t units, uint64_t now) noexcept {
  if (!share.host || !units) return;
  clock_take(s.ceil_tat_ns, share.p->ceil, units, now);
  clock_take(share.host->tat_ns, share.p->host, units, now);
}

}  // namespace

PaceTake pace_take(BucketState& s, const BucketParams& p, const PaceShare& share, const PaceAsk& ask,
                   uint64_t now) noexcept {
  // Light only when there is a queue to go ahead of: without one the call goes now anyway,
  // and the light clock's reach is kept for when it is needed.
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  bool queue = tat > now && tat - now <= p.max_ahead_ns;
  if (ask.light && ask.light <= pace_light_max(p) && queue && bucket_take_light(s, p, ask.light, now)) {
    charge_share(s, share, ask.light, now);
    return {PaceWay::Light, ask.light, 0};
  }
  // Under shares the rate gives what it can within its depth (in its queue's order, as
  // without shares); only what it cannot is borrowed. "No room" is the test share_take
  // makes for a refill that may wait (clock_has_room), so a rate is full or not whoever
  // asks, library or supervisor, blocking or not; and it counts the take's size (the
  // library's rule, the queue past half the depth, did not: a quantum behind 4 ms of
  // queue went on the rate, past its depth, with the host idle).
  uint64_t want = ask.place ? ask.place : ask.take;
  if (share.host && !clock_has_room(s.tat_ns, p, want, now) && share_borrow_now(s, *share.host, *share.p, want, now))
    return {PaceWay::Borrow, want, 0};
  bool queued = false;
  tat = bucket_take_or_queue(s, p, ask.take, ask.place, now, &queued, 0, p.depth_ns);
  if (!queued) {
    charge_share(s, share, ask.take, now);
    return {PaceWay::Go, ask.take, 0};
  }
  charge_share(s, share, ask.place, now);  // its place in the rate's queue: the host sees it now
  if (!ask.place) return {PaceWay::Queue, 0, 0};
  return {PaceWay::Queue, ask.place, bucket_place_due(p, tat, ask.place, now)};
}

}  // namespace bonsai
