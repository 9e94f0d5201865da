// SPDX-License-Identifier: MIT
// The token bucket: pure arithmetic on state that may live in process memory or in a
// shared-memory segment. No syscalls (the caller passes the time), no allocation, no
// locks; safe in signal handlers.
//
// Form: a virtual-clock (GCRA) bucket: one atomic "theoretical arrival time" `tat`.
// Taking n units moves tat to max(tat, now) + n/rate; the taker may go once
// now >= tat - depth. Callers do not take per call: each thread prepays a batch
// (see credit_* below) and spends it without touching shared memory, so an
// unthrottled call costs no atomic and no clock read. Every unit moved is taken
// exactly once, so the long-run rate is exact. A burst is bounded by the depth
// however many threads share the bucket: a taker goes only while tat stays within
// the depth of now; a write is paid before it moves (its size is known); a read's
// bytes beyond the thread's credit are taken as soon as it returns and recorded in
// late_ns, and takers already asleep in the queue wait that much longer.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"

namespace bonsai {

static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Immutable per-rule numbers, derived from a Rule.
struct BucketParams {
  uint64_t ns_per_unit_q32;  // nanoseconds per unit, 32.32 fixed point: the low 64 bits
  uint64_t ns_per_unit_hi;   // and the bits above them (non-zero below ~0.23 units a second)
  uint64_t depth_ns;         // bucket depth expressed as time
  int64_t batch;             // units a thread prepays per refill (~1 ms of rate)
  int64_t chunk;             // largest transfer worth making in one real call (INT64_MAX: calls)
  bool per_call;             // a call-rate bucket: each call costs one unit
  uint64_t max_ahead_ns;     // the furthest a legitimate tat can be ahead of now
};

inline constexpr uint64_t kDefaultDepthNs = 10'000'000;  // default depth: 10 ms of rate
inline constexpr uint64_t kBatchNs = 1'000'000;          // a thread's prepaid batch: 1 ms

// A shared bucket's clock is written by every process of a service, and by anyone
// who can write the segment: a tat further ahead of now than any legitimate debt
// (the depth plus kAheadTakers concurrent takes of a batch and a chunk each, at
// least kMinAheadNs, at most kMaxAheadNs) is garbage or another clock's reading and
// is forgotten (the take starts from now) instead of stalling every process.
inline constexpr uint64_t kAheadTakers = 256;
inline constexpr uint64_t kMinAheadNs = 10'000'000'000ull;       // 10 s
inline constexpr uint64_t kMaxAheadNs = 86'400'000'000'000ull;   // 1 day

// Forgets all debt: the next take starts from `now`.
inline void bucket_reset_clock(BucketState& s) noexcept {
  s.tat_ns.store(0, std::memory_order_relaxed);
  s.ceil_tat_ns.store(0, std::memory_order_relaxed);  // shares: the rule's ceiling too
}

// Derives params from a rule at its exact rate (rule_rate_micro; rate 0 is treated as 1).
BucketParams bucket_params(const Rule& rule) noexcept;

// ns for `units` at the bucket's rate, saturating at 2^62.
uint64_t bucket_cost_ns(const BucketParams& p, uint64_t units) noexcept;

// Takes `units`: tat = max(tat, now) + cost, where a tat beyond now + max_ahead_ns
// counts as now (see kMaxAheadNs). @return the new tat, at most
// now + max_ahead_ns + cost. Cost: one CAS loop on the shared line.
uint64_t bucket_take(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// bucket_take on any clock of the same form (a share's ceiling, a host's bucket).
uint64_t clock_take(std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// Takes `units` only if the clock lets them go now: tat = max(tat, now) + cost stays within
// the depth of now, or, for units costing more than the depth, the clock is idle (they then
// wait the rest: bucket_eligible). One CAS loop, no write when refused.
// @return true with `*tat_out` the new tat; false with `*due` the earliest time it could.
bool clock_try_take(std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units, uint64_t now_ns,
                    uint64_t* tat_out, uint64_t* due) noexcept;

// clock_try_take's test without the take: whether the clock would let `units` go now. The
// one meaning of "a rate has room" under shares (bucket/share.h, bucket/pace_step.h).
bool clock_has_room(const std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units,
                    uint64_t now_ns) noexcept;

// Returns `units` taken earlier that were not used (a write that moved less than it
// paid for): tat goes back by their cost, never below `now` (an idle bucket's clock
// restarts at now anyway, so nothing is gained by going further).
void bucket_give_back(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// When a taker whose take returned `tat` may go: 0 if tat is within the depth of
// now, else the absolute time to wait until. A sleeper wakes `slack_ns` (at most
// half the depth) after the earliest instant, so the takes that follow find that
// much room and go without a sleep each, while no take ever goes more than the
// depth ahead: the slack is inside the depth, not on top of it.
inline uint64_t bucket_eligible(const BucketParams& p, uint64_t tat, uint64_t now_ns, uint64_t slack_ns) noexcept {
  if (tat <= now_ns + p.depth_ns) return 0;
  uint64_t slack = slack_ns < p.depth_ns / 2 ? slack_ns : p.depth_ns / 2;
  return tat - p.depth_ns + slack;
}

// Takes for a call that must not wait (a non-blocking descriptor): `units_free` when the
// bucket's queue reaches no further than `queue_ns` ahead of now and its clock stays
// within `reach_ns` of now after them (the call goes now); else `units_queued`, a place
// at the end of the queue, due when the place starts (the returned tat less its cost:
// places are served in order at the rate, no burst among them). One CAS loop.
// @return the new tat; `*queued` tells which was taken.
uint64_t bucket_take_or_queue(BucketState& s, const BucketParams& p, uint64_t units_free, uint64_t units_queued,
                              uint64_t now_ns, bool* queued, uint64_t queue_ns, uint64_t reach_ns) noexcept;

// When a place of `units` whose take returned `tat` is due: when it starts (0: now).
// Places are served in the order they were taken, at the rate, with no burst among them.
// (Dating a late taker's next place from when its previous one was due was tried: in a
// loop that serves the due places in a fixed order it made the shares less even; what
// keeps them even is waking the loop when a place is due, not a millisecond later.)
uint64_t bucket_place_due(const BucketParams& p, uint64_t tat, uint64_t units, uint64_t now_ns) noexcept;

// A light descriptor (one holding no place in the queue lately: a small response, a new
// connection) goes ahead of the queue, so that it is not made to wait a round of the busy
// ones. Its units are taken from the bucket like any others (the places taken after it
// wait that much longer); what goes ahead is itself limited by a second clock,
// light_tat_ns, at the bucket's rate with a depth of pace_light_reach (4 depths), so
// many light writes at once cannot make a burst beyond it.
inline uint64_t pace_light_reach(const BucketParams& p) noexcept { return p.depth_ns * 4; }

// Whether a descriptor that last took a place at `last_place` (0: never; its own
// clock, as `now`) is light, its bucket's queue reaching `queue_ns` ahead: no place for
// kPaceLightAfterNs nor for two lengths of the queue (a busy descriptor takes a place
// every round of the queue, however long the round: it is never light).
inline constexpr uint64_t kPaceLightAfterNs = 100'000'000;
inline bool pace_is_light(uint64_t last_place, uint64_t now, uint64_t queue_ns) noexcept {
  if (!last_place) return true;
  uint64_t idle = now > last_place ? now - last_place : 0;
  return idle > kPaceLightAfterNs && idle / 2 > queue_ns;
}

// Takes `units` for a light write if the light clock allows them within
// pace_light_reach (and then from the bucket as bucket_take). @return false (nothing
// taken) if not.
bool bucket_take_light(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;


// The most a non-blocking call takes from a bucket that binds: one chunk (~8 ms of rate,
// at least 16 KiB; one call for a call-rate bucket). Every descriptor waiting for the
// bucket holds one such place in its queue, so N busy descriptors share it in turns
// (max-min fair, deficit round robin with the chunk as quantum). A chunk, not less: each
// place costs the server a few system calls (the call, a readiness change), so a smaller
// quantum multiplies its CPU per byte (0.5 ms places: 58x an uncapped nginx's); small
// responses do not wait for a round of it (pace_light_max).
inline uint64_t pace_quantum(const BucketParams& p) noexcept {
  if (p.per_call) return 1;
  return static_cast<uint64_t>(p.chunk);
}

// The largest write a light descriptor makes ahead of the queue: a quantum (at least
// 16 KiB: a small response with its headers), never a call for a call-rate bucket.
inline uint64_t pace_light_max(const BucketParams& p) noexcept {
  if (p.per_call) return 1;
  return pace_quantum(p);
}

// Takes `units` that have already moved (a read's bytes beyond its credit): as
// bucket_take, and adds their cost to late_ns for the takers queued before it.
uint64_t bucket_take_late(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// After a sleep to `deadline` that began when late_ns read `*late_seen`: the
// deadline moved by what was charged late meanwhile (never past the time a fresh
// take would wait for, never for a tat bucket_take would forget), and `*late_seen`
// updated. @return the new deadline, or 0 if the taker may go now.
uint64_t bucket_recheck(const BucketState& s, const BucketParams& p, uint64_t deadline, uint64_t* late_seen,
                        uint64_t now_ns, uint64_t slack_ns) noexcept;

// ---- A thread's prepaid credit on one bucket ----
// credit > 0: calls go ahead and subtract what they move. credit <= 0: refill.

// credit >= need (a write's size, 0 for a read): the call goes without a take.

// Units to take when refilling a credit of `credit` before a call that needs
// `need`: what is missing (a prepaid write's deficit included) plus a batch.
inline uint64_t credit_refill_units(const BucketParams& p, int64_t credit, uint64_t need = 0) noexcept {
  auto want = static_cast<int64_t>(need < static_cast<uint64_t>(INT64_MAX / 2) ? need : INT64_MAX / 2);
  return static_cast<uint64_t>(p.batch) + (credit < want ? static_cast<uint64_t>(want - credit) : 0);
}

// A call that moved more than the credit it found (a read: its size is known only
// after it) is settled at once with bucket_take_late, so that no thread holds
// unpaid bytes and the queue sees them.
inline bool credit_needs_settle(int64_t credit) noexcept { return credit < 0; }

}  // namespace bonsai
