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
// exactly once, so the long-run rate is exact; bursts are bounded by depth + slack
// + one batch per thread.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"

namespace bonsai {

static_assert(std::atomic<uint64_t>::is_always_lock_free);

// Immutable per-rule numbers, derived from a Rule.
struct BucketParams {
  uint64_t ns_per_unit_q32;  // nanoseconds per unit, 32.32 fixed point
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
inline void bucket_reset_clock(BucketState& s) noexcept { s.tat_ns.store(0, std::memory_order_relaxed); }

// Derives params from a rule (rate 0 is treated as 1).
BucketParams bucket_params(const Rule& rule) noexcept;

// ns for `units` at the bucket's rate, saturating at 2^62.
uint64_t bucket_cost_ns(const BucketParams& p, uint64_t units) noexcept;

// Takes `units`: tat = max(tat, now) + cost, where a tat beyond now + max_ahead_ns
// counts as now (see kMaxAheadNs). @return the new tat, at most
// now + max_ahead_ns + cost. Cost: one CAS loop on the shared line.
uint64_t bucket_take(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// Returns `units` taken earlier that were not used (a write that moved less than it
// paid for): tat goes back by their cost, never below `now` (an idle bucket's clock
// restarts at now anyway, so nothing is gained by going further).
void bucket_give_back(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept;

// When a taker whose take returned `tat` may go: 0 if within `slack_ns` of now
// (the debt is carried), else the absolute time to wait until.
inline uint64_t bucket_eligible(const BucketParams& p, uint64_t tat, uint64_t now_ns, uint64_t slack_ns) noexcept {
  uint64_t at = tat > p.depth_ns ? tat - p.depth_ns : 0;
  return at > now_ns + slack_ns ? at : 0;
}

// ---- A thread's prepaid credit on one bucket ----
// credit > 0: calls go ahead and subtract what they move. credit <= 0: refill.

// Units to take when refilling a credit of `credit` (its deficit plus a batch).
inline uint64_t credit_refill_units(const BucketParams& p, int64_t credit) noexcept {
  return static_cast<uint64_t>(p.batch) + (credit < 0 ? static_cast<uint64_t>(-credit) : 0);
}

// A deficit larger than a batch is settled at once (taken from the bucket) so that
// other threads see it and a thread that exits leaves at most a batch unpaid.
inline bool credit_needs_settle(const BucketParams& p, int64_t credit) noexcept { return credit < -p.batch; }

}  // namespace bonsai
