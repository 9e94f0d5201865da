// SPDX-License-Identifier: MIT
// Carrying bucket state across a limit change (see limits_carry.h).
#include "bucket/limits_carry.h"

#include "sys/div128.h"

namespace bonsai {
namespace {

bool params_equal(const BucketParams& a, const BucketParams& b) {
  return a.ns_per_unit_q32 == b.ns_per_unit_q32 && a.ns_per_unit_hi == b.ns_per_unit_hi && a.depth_ns == b.depth_ns &&
         a.per_call == b.per_call;
}

// Units worth `ns` of time at the bucket's rate (the inverse of bucket_cost_ns), saturating.
uint64_t units_for_ns(const BucketParams& p, uint64_t ns) {
  constexpr uint64_t kSaturate = uint64_t{1} << 62;
  uint64_t u;
  if (p.ns_per_unit_hi) return ns / ((p.ns_per_unit_hi << 32) | (p.ns_per_unit_q32 >> 32));  // >= 2^32 ns a unit
  if (!div128(ns >> 32, ns << 32, p.ns_per_unit_q32 ? p.ns_per_unit_q32 : 1, u)) return kSaturate;
  return u > kSaturate ? kSaturate : u;
}

}  // namespace

void limits_match(const LimitSet& prev, const LimitSet& next, uint8_t from[kMaxRules]) noexcept {
  uint32_t np = prev.count < kMaxRules ? prev.count : kMaxRules;
  uint32_t nn = next.count < kMaxRules ? next.count : kMaxRules;
  for (uint32_t i = 0; i < kMaxRules; ++i) from[i] = kNoBucket;
  for (uint32_t i = 0; i < nn; ++i) {
    if (i < np && rule_continues(prev.rules[i], next.rules[i])) {  // the common case: same place
      from[i] = static_cast<uint8_t>(i);
      continue;
    }
    for (uint32_t j = 0; j < np; ++j)
      if (rule_continues(prev.rules[j], next.rules[i])) {
        from[i] = static_cast<uint8_t>(j);
        break;
      }
  }
}

bool limits_same_rules(const LimitSet& prev, const LimitSet& next) noexcept {
  if (prev.count != next.count || prev.count > kMaxRules) return false;
  for (uint32_t i = 0; i < prev.count; ++i)
    if (!rule_continues(prev.rules[i], next.rules[i])) return false;
  return true;
}

uint64_t bucket_carry_tat(uint64_t tat, const BucketParams& prev, const BucketParams& next, uint64_t now) noexcept {
  if (params_equal(prev, next)) return tat;
  if (tat <= now) return tat;  // a full bucket stays full (an idle clock restarts at now anyway)
  if (tat > now + prev.max_ahead_ns) return 0;  // garbage: forgotten, as bucket_take would
  // Units taken ahead of now: those within the depth are spent burst, those beyond it
  // debt. Both stay units; a smaller depth clips the credit (depth minus that) by itself.
  uint64_t ahead = units_for_ns(prev, tat - now);
  uint64_t prev_depth = units_for_ns(prev, prev.depth_ns);
  uint64_t next_depth = units_for_ns(next, next.depth_ns);
  uint64_t credit = ahead < prev_depth ? prev_depth - ahead : 0;  // burst still free
  uint64_t units;
  if (credit) units = credit >= next_depth ? 0 : next_depth - credit;  // clipped to the new depth
  else units = next_depth + (ahead - prev_depth);                      // the whole depth plus the debt
  uint64_t ns = bucket_cost_ns(next, units);
  uint64_t out = now + ns;
  return out < now ? UINT64_MAX : out;
}

void buckets_carry(const LimitsView& prev, BucketState* prev_states, const LimitsView& next,
                   BucketState* next_states, uint64_t now) noexcept {
  uint8_t from[kMaxRules];
  limits_match(prev.set, next.set, from);
  uint32_t np = prev.set.count < kMaxRules ? prev.set.count : kMaxRules;
  uint32_t nn = next.set.count < kMaxRules ? next.set.count : kMaxRules;
  // Renumbered buckets read their old state before any is written.
  uint64_t tat[kMaxRules], late[kMaxRules];
  for (uint32_t j = 0; j < np; ++j) {
    tat[j] = prev_states[j].tat_ns.load(std::memory_order_relaxed);
    late[j] = prev_states[j].late_ns.load(std::memory_order_relaxed);
  }
  for (uint32_t i = 0; i < nn; ++i) {
    BucketState& s = next_states[i];
    uint8_t j = from[i];
    if (j == kNoBucket) {
      s.tat_ns.store(np ? bucket_fresh_tat(next.params[i], now) : 0, std::memory_order_relaxed);
      s.ceil_tat_ns.store(0, std::memory_order_relaxed);  // a ceiling starts afresh (it only holds back)
      continue;
    }
    if (&s == &prev_states[j]) {  // in place: a take meanwhile is converted too
      uint64_t t = s.tat_ns.load(std::memory_order_relaxed);
      while (!s.tat_ns.compare_exchange_weak(t, bucket_carry_tat(t, prev.params[j], next.params[i], now),
                                             std::memory_order_relaxed)) {
      }
      continue;
    }
    s.tat_ns.store(bucket_carry_tat(tat[j], prev.params[j], next.params[i], now), std::memory_order_relaxed);
    s.late_ns.store(late[j], std::memory_order_relaxed);
  }
  // Buckets past the new rules are free: a later rule there starts afresh.
  if (next_states == prev_states)
    for (uint32_t i = nn; i < np; ++i) bucket_reset_clock(next_states[i]);
}

}  // namespace bonsai
