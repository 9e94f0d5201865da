// SPDX-License-Identifier: MIT
// Token bucket arithmetic (see token_bucket.h). No syscalls, no allocation.
#include "bucket/token_bucket.h"

#include "abi/limit_parse.h"
#include "sys/div128.h"

namespace bonsai {
namespace {

constexpr uint64_t kNsPerSec = 1'000'000'000;
constexpr uint64_t kSaturate = uint64_t{1} << 62;

// Units of a rate of `micro` millionths a second in `ns`.
uint64_t units_in(uint64_t micro, uint64_t ns) {
  uint64_t u = mul_div_sat(micro, ns, kNsPerSec * kRateMicro);
  return u > kSaturate ? kSaturate : u;
}

// Where a take at `now` starts: the clock's tat, or now if it is idle or garbage (beyond
// now + max_ahead_ns: forgotten).
uint64_t clock_base(uint64_t tat, const BucketParams& p, uint64_t now_ns) {
  uint64_t ceiling = now_ns + p.max_ahead_ns;
  if (ceiling < now_ns) ceiling = UINT64_MAX;
  return tat > now_ns && tat <= ceiling ? tat : now_ns;
}

// The furthest past now a take costing `cost` may start and still go now: within the
// depth after it; units costing more than the depth go only on an idle clock (the most
// room there is), or they could never go this way.
uint64_t clock_room(const BucketParams& p, uint64_t cost) { return cost < p.depth_ns ? p.depth_ns - cost : 0; }

}  // namespace

uint64_t bucket_cost_ns(const BucketParams& p, uint64_t units) noexcept {
  unsigned __int128 ns = (static_cast<unsigned __int128>(units) * p.ns_per_unit_q32) >> 32;
  if (p.ns_per_unit_hi) {  // a unit costs 2^32 ns or more (a rate below ~0.23/s)
    unsigned __int128 hi = static_cast<unsigned __int128>(units) * p.ns_per_unit_hi;
    if (hi >> 62) return kSaturate;
    ns += hi << 32;
  }
  return ns > kSaturate ? kSaturate : static_cast<uint64_t>(ns);
}

BucketParams bucket_params(const Rule& rule) noexcept {
  uint64_t micro = rule.rate ? rule_rate_micro(rule) : kRateMicro;
  if (micro < kMinRateMicro) micro = kMinRateMicro;  // untrusted: never slower than the parser allows
  BucketParams p{};
  // ns per unit in 32.32 fixed point: 10^15 << 32 over the rate in millionths, a quotient
  // of up to 82 bits taken in two 128-by-64 divisions (sys/div128.h: no libgcc).
  constexpr uint64_t kNumHi = (kNsPerSec * kRateMicro) >> 32, kNumLo = (kNsPerSec * kRateMicro) << 32;
  p.ns_per_unit_hi = kNumHi / micro;
  if (!div128(kNumHi % micro, kNumLo, micro, p.ns_per_unit_q32)) p.ns_per_unit_q32 = UINT64_MAX;
  uint64_t rate = micro / kRateMicro;  // whole units a second (for the chunk)
  uint64_t depth_units = rule.burst ? rule.burst : units_in(micro, kDefaultDepthNs);
  if (depth_units < 1) depth_units = 1;
  p.depth_ns = bucket_cost_ns(p, depth_units);
  uint64_t batch = units_in(micro, kBatchNs);
  p.batch = static_cast<int64_t>(batch ? batch : 1);
  // Transfers larger than ~8 ms of rate are split (blocking writes, file reads) or
  // shortened (pipes, sockets, non-blocking fds) so that one call cannot make a long
  // burst; never below 16 KiB, where the per-call cost would start to show. A whole
  // number of 4 KiB pages: the pieces of a split O_DIRECT transfer stay aligned (an
  // unaligned piece fails EINVAL), whatever the rate.
  uint64_t chunk = rate / 128 / 4096 * 4096;
  p.chunk = static_cast<int64_t>(chunk < 16384 ? 16384 : chunk);
  p.per_call = rule.unit == RateUnit::Calls;
  if (p.per_call) p.chunk = INT64_MAX;
  // The most one take can legitimately add: a batch plus a deficit (at most a chunk
  // of bytes, or a batch of calls); kAheadTakers of them at once, plus the depth.
  auto b = static_cast<uint64_t>(p.batch);
  uint64_t take = b + (p.per_call ? b : static_cast<uint64_t>(p.chunk));
  uint64_t ahead = bucket_cost_ns(p, take);
  ahead = ahead > kMaxAheadNs / kAheadTakers ? kMaxAheadNs : ahead * kAheadTakers;
  if (ahead < kMinAheadNs) ahead = kMinAheadNs;
  ahead += p.depth_ns < kMaxAheadNs ? p.depth_ns : kMaxAheadNs;
  p.max_ahead_ns = ahead < kMaxAheadNs ? ahead : kMaxAheadNs;
  return p;
}

uint64_t bucket_take(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept {
  return clock_take(s.tat_ns, p, units, now_ns);
}

uint64_t clock_take(std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept {
  // An idle bucket's clock restarts at `now` (not earlier): together with going
  // `depth` ahead of tat in bucket_eligible, that bounds a burst to the depth.
  uint64_t cost = bucket_cost_ns(p, units);
  uint64_t floor = now_ns;
  uint64_t ceiling = now_ns + p.max_ahead_ns;  // both < 2^63: no overflow
  if (ceiling < now_ns) ceiling = UINT64_MAX;
  uint64_t tat = clock.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    // Garbage, or a clock from another time base: forgotten, not waited for.
    uint64_t base = tat > floor && tat <= ceiling ? tat : floor;
    next = base + cost < base ? UINT64_MAX : base + cost;
  } while (!clock.compare_exchange_weak(tat, next, std::memory_order_relaxed));
  return next;
}

bool clock_try_take(std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units, uint64_t now_ns,
                    uint64_t* tat_out, uint64_t* due) noexcept {
  uint64_t cost = bucket_cost_ns(p, units);
  uint64_t room = clock_room(p, cost);
  uint64_t tat = clock.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    uint64_t base = clock_base(tat, p, now_ns);
    if (base > now_ns + room) {
      *due = base - room;
      return false;
    }
    next = base + cost < base ? UINT64_MAX : base + cost;
  } while (!clock.compare_exchange_weak(tat, next, std::memory_order_relaxed));
  *tat_out = next;
  return true;
}

bool clock_has_room(const std::atomic<uint64_t>& clock, const BucketParams& p, uint64_t units,
                    uint64_t now_ns) noexcept {
  uint64_t base = clock_base(clock.load(std::memory_order_relaxed), p, now_ns);
  return base <= now_ns + clock_room(p, bucket_cost_ns(p, units));
}

uint64_t bucket_take_or_queue(BucketState& s, const BucketParams& p, uint64_t units_free, uint64_t units_queued,
                              uint64_t now_ns, bool* queued, uint64_t queue_ns, uint64_t reach_ns) noexcept {
  uint64_t cost_free = bucket_cost_ns(p, units_free);
  uint64_t cost_queued = bucket_cost_ns(p, units_queued);
  uint64_t ceiling = now_ns + p.max_ahead_ns;
  if (ceiling < now_ns) ceiling = UINT64_MAX;
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  uint64_t next;
  bool q;
  do {
    uint64_t base = tat > now_ns && tat <= ceiling ? tat : now_ns;
    uint64_t free_end = base + cost_free < base ? UINT64_MAX : base + cost_free;
    q = base > now_ns + queue_ns || free_end > now_ns + reach_ns;
    uint64_t cost = q ? cost_queued : cost_free;
    next = base + cost < base ? UINT64_MAX : base + cost;
  } while (!s.tat_ns.compare_exchange_weak(tat, next, std::memory_order_relaxed));
  *queued = q;
  return next;
}

bool bucket_take_light(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept {
  uint64_t cost = bucket_cost_ns(p, units);
  uint64_t reach = pace_light_reach(p);
  uint64_t ceiling = now_ns + p.max_ahead_ns;
  if (ceiling < now_ns) ceiling = UINT64_MAX;
  uint64_t lt = s.light_tat_ns.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    uint64_t base = lt > now_ns && lt <= ceiling ? lt : now_ns;  // garbage: forgotten
    next = base + cost < base ? UINT64_MAX : base + cost;
    if (next > now_ns + reach) return false;
  } while (!s.light_tat_ns.compare_exchange_weak(lt, next, std::memory_order_relaxed));
  bucket_take(s, p, units, now_ns);
  return true;
}

uint64_t bucket_place_due(const BucketParams& p, uint64_t tat, uint64_t units, uint64_t now_ns) noexcept {
  uint64_t cost = bucket_cost_ns(p, units);
  uint64_t start = tat > cost ? tat - cost : 0;
  return start > now_ns ? start : 0;
}

}  // namespace bonsai

namespace bonsai {

void bucket_give_back(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept {
  uint64_t cost = bucket_cost_ns(p, units);
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    if (tat <= now_ns) return;  // nothing owed any more: the units were never waited for
    next = tat - cost > now_ns && tat > cost ? tat - cost : now_ns;
  } while (!s.tat_ns.compare_exchange_weak(tat, next, std::memory_order_relaxed));
}

uint64_t bucket_take_late(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns) noexcept {
  uint64_t tat = bucket_take(s, p, units, now_ns);
  s.late_ns.fetch_add(bucket_cost_ns(p, units), std::memory_order_relaxed);
  return tat;
}

uint64_t bucket_recheck(const BucketState& s, const BucketParams& p, uint64_t deadline, uint64_t* late_seen,
                        uint64_t now_ns, uint64_t slack_ns) noexcept {
  uint64_t late = s.late_ns.load(std::memory_order_relaxed);
  uint64_t grew = late - *late_seen;  // modular: a garbage value is bounded below
  *late_seen = late;
  if (grew == 0) return deadline > now_ns ? deadline : 0;
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  if (tat > now_ns + p.max_ahead_ns) return deadline > now_ns ? deadline : 0;  // garbage: forgotten
  uint64_t latest = bucket_eligible(p, tat, now_ns, slack_ns);  // what a fresh take would wait for
  uint64_t next = deadline + grew < deadline ? UINT64_MAX : deadline + grew;
  if (next > latest) next = latest;
  return next > now_ns ? next : 0;
}

}  // namespace bonsai
