// SPDX-License-Identifier: MIT
// What a bucket keeps when the limits change under it (a live `set`, a controller, the
// fleet agent retuning a rate several times a second): nothing is given away and nothing
// is charged twice. A rule of the new set continues the old rule with the same calls, fd
// kinds and unit; its bucket keeps its debt or its credit in units (as `tc change` keeps
// a class's tokens), the credit clipped to the new depth, the debt paid at the new rate.
// A removed rule's bucket is freed; a rule added to a limited service starts without
// burst (no free depth at install). The same limit set again leaves every bucket as it
// was. Pure: no clock, no allocation; the library, the supervisor and bonsaictl (for a
// service's shared buckets) all carry state with these.
#pragma once
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"
#include "bucket/limits_view.h"

namespace bonsai {

// True if `b` continues `a`: the same calls, fd kinds and unit (rate and burst may differ).
inline bool rule_continues(const Rule& a, const Rule& b) noexcept {
  return a.calls == b.calls && a.fd_mask == b.fd_mask && a.unit == b.unit;
}

// For each rule of `next`, the rule of `prev` it continues, or kNoBucket (a new rule).
void limits_match(const LimitSet& prev, const LimitSet& next, uint8_t from[kMaxRules]) noexcept;

// True if `next` has the same rules as `prev` in the same order (rates and bursts may
// differ): a rate-only update, which keeps every bucket's index.
bool limits_same_rules(const LimitSet& prev, const LimitSet& next) noexcept;

// A bucket clock `tat` under `prev` carried to `next` at `now`: the units owed beyond
// now (debt, and the credit below the depth) kept in units. Equal parameters: unchanged.
uint64_t bucket_carry_tat(uint64_t tat, const BucketParams& prev, const BucketParams& next, uint64_t now) noexcept;

// The clock of a bucket whose rule was added by a live change: no burst at install.
inline uint64_t bucket_fresh_tat(const BucketParams& p, uint64_t now) noexcept { return now + p.depth_ns; }

// Carries the states of `prev`'s buckets (`prev_states`) to `next`'s (`next_states`; the
// same array for a service's or a process's buckets) at `now`. A rule added starts
// without burst if `prev` had rules, else as a fresh bucket (clock 0). Buckets that keep
// their index are converted in place with a CAS, so a concurrent take is never lost.
void buckets_carry(const LimitsView& prev, BucketState* prev_states, const LimitsView& next,
                   BucketState* next_states, uint64_t now) noexcept;

}  // namespace bonsai
