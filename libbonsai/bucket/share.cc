// SPDX-License-Identifier: MIT
// Shares: the three-state refill (see share.h).
#include "bucket/share.h"

#include "abi/limit_parse.h"

namespace bonsai {
namespace {

// Units charged to the rate (and the host) whatever either says. @return when they may go (0: now).
uint64_t take_rate(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units, uint64_t now,
                   uint64_t slack) noexcept {
  uint64_t tat = clock_take(own.tat_ns, p.rate, units, now);
  clock_take(host.tat_ns, p.host, units, now);
  return bucket_eligible(p.rate, tat, now, slack);
}

}  // namespace

bool share_params(const Rule& rule, const Rule& capacity, ShareParams& out) noexcept {
  if (!rule_ceil_above(rule) || rule.ceil > kMaxRate) return false;
  if (capacity.rate == 0 || capacity.rate > kMaxRate || capacity.unit != rule.unit) return false;
  out.rate = bucket_params(rule);
  Rule c = rule;
  rule_set_rate(c, rule.ceil);
  out.ceil = bucket_params(c);
  Rule h = capacity;
  if (h.burst > (uint64_t{1} << 50)) h.burst = 0;  // untrusted: a nonsense depth is the default one
  out.host = bucket_params(h);
  return true;
}

uint64_t share_reserved_rate(uint64_t before, uint64_t after, uint64_t elapsed_ns, uint64_t guaranteed) noexcept {
  if (after <= before || elapsed_ns == 0 || guaranteed == 0) return 0;
  unsigned __int128 moved = after - before;
  unsigned __int128 rate = moved * 1'000'000'000u / elapsed_ns;
  return rate >= guaranteed ? guaranteed : static_cast<uint64_t>(rate);
}

uint64_t share_host_rate(uint64_t capacity, uint64_t reserved) noexcept {
  uint64_t floor = capacity / kShareHostFloorDiv;
  if (floor == 0) floor = 1;
  return reserved >= capacity || capacity - reserved < floor ? floor : capacity - reserved;
}

ShareStep share_take(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units, uint64_t now,
                     uint64_t slack, const ShareStep* retry) noexcept {
  ShareStep step{ShareWay::Wait, retry ? retry->ceil_at : 0, 0, retry ? retry->rounds : 0};
  if (step.ceil_at <= now) step.ceil_at = 0;
  if (!retry) step.ceil_at = bucket_eligible(p.ceil, clock_take(own.ceil_tat_ns, p.ceil, units, now), now, slack);
  if (retry && step.rounds >= kShareRounds) {  // the starvation guard (share.h)
    step.way = ShareWay::Rate;
    uint64_t at = take_rate(own, host, p, units, now, slack);
    step.go_at = at > step.ceil_at ? at : step.ceil_at;
    return step;
  }
  uint64_t tat = 0, rate_due = 0, host_due = 0;
  if (clock_try_take(own.tat_ns, p.rate, units, now, &tat, &rate_due)) {
    clock_take(host.tat_ns, p.host, units, now);  // the host sees every unit its takers move
    step.way = ShareWay::Rate;
    uint64_t at = bucket_eligible(p.rate, tat, now, slack);
    step.go_at = at > step.ceil_at ? at : step.ceil_at;
    return step;
  }
  if (clock_try_take(host.tat_ns, p.host, units, now, &tat, &host_due)) {
    step.way = ShareWay::Borrow;
    uint64_t at = bucket_eligible(p.host, tat, now, slack);
    step.go_at = at > step.ceil_at ? at : step.ceil_at;
    return step;
  }
  step.go_at = rate_due < host_due ? rate_due : host_due;
  if (step.go_at <= now) step.go_at = now + 1;  // raced: try again at once, never in the past
  // A round is a wait served: a caller back early (the supervisor pays debt at any
  // notification of the thread) has not waited yet.
  if (!retry || now >= retry->go_at) ++step.rounds;
  return step;
}

ShareWay share_take_late(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units,
                         uint64_t now) noexcept {
  clock_take(own.ceil_tat_ns, p.ceil, units, now);
  uint64_t tat = 0, due = 0;
  if (clock_try_take(own.tat_ns, p.rate, units, now, &tat, &due)) {
    clock_take(host.tat_ns, p.host, units, now);
    return ShareWay::Rate;
  }
  clock_take(host.tat_ns, p.host, units, now);
  return ShareWay::Borrow;
}

bool share_borrow_now(BucketState& own, BucketState& host, const ShareParams& p, uint64_t units,
                      uint64_t now) noexcept {
  uint64_t tat = 0, due = 0;
  if (!clock_try_take(host.tat_ns, p.host, units, now, &tat, &due)) return false;
  if (clock_try_take(own.ceil_tat_ns, p.ceil, units, now, &tat, &due)) return true;
  bucket_give_back(host, p.host, units, now);
  return false;
}

}  // namespace bonsai
