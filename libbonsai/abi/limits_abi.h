// SPDX-License-Identifier: MIT
// The compact binary form of a set of limits: what the limit parser produces, what
// bonsaictl writes into shared memory and what the library's buckets are built from.
// Plain trivially-copyable data with a fixed layout; no pointers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "abi/calls.h"

namespace bonsai {

// Rules in one set: enough for one rule per call name (every call its own bucket).
// Part of the segment layout (LimitSet, shared buckets): changing it changes
// shm_layout_fingerprint() and needs a BONSAI_ABI_VERSION bump.
inline constexpr uint32_t kMaxRules = 64;
static_assert(kMaxRules >= kCallCount, "every call may have a rule of its own");
static_assert(kMaxRules < 0xFF, "rule indices are uint8_t, 0xFF is kNoBucket");
inline constexpr uint8_t kNoBucket = 0xFF;
inline constexpr uint8_t kAnyFd = 0x0F;  // bit per FdKind; a rule without `fd=`
inline constexpr uint8_t kFdKindsWithFd = 0x07;

enum class RateUnit : uint8_t { Bytes = 0, Calls = 1 };

// One rule: a set of calls sharing one bucket.
struct Rule {
  CallMask calls;   // calls sharing this bucket
  uint64_t rate;    // units per second, > 0, rounded up to a whole unit (see rate_less_micro):
                    // the guaranteed rate under a host capacity
  uint64_t burst;   // bucket depth in units; 0 = default depth (see token_bucket.h)
  RateUnit unit;    // bytes moved or calls made
  uint8_t fd_mask;  // bit (1 << FdKind) per kind the rule applies to; kAnyFd if no `fd=`
  uint8_t host1;    // shares: 1 + the host capacity rule it borrows from (0: none; see
                    // shares_resolve); set by whoever knows the host's capacity
  uint8_t pad_;
  uint32_t rate_less_micro;  // a fractional rate (2.5/s): the exact rate is `rate` less this
                    // many millionths of a unit, < 10^6. In bytes layout 14 kept as padding
                    // (always zero there), so a whole rate reads the same in every release,
                    // and a reader that predates it takes the rate rounded up: close, never
                    // zero (docs/upgrades.md). Read and written through rule_rate_micro and
                    // rule_set_rate*, never alone.
  uint64_t ceil;    // shares: the most it may reach borrowing idle capacity, whole units;
                    // 0 or not above the rate: no borrowing (a hard cap at the rate)
};
static_assert(sizeof(Rule) == 40 && std::is_trivially_copyable_v<Rule>);
static_assert(offsetof(Rule, rate_less_micro) == 28, "in the bytes layout 14 kept as padding");

// Rates are kept to a millionth of a unit a second: every decimal a user writes with up to
// six places, and every such decimal of a KiB/MiB/GiB (a power of two keeps the places).
inline constexpr uint64_t kRateMicro = 1'000'000;

// The rule's exact rate in millionths of a unit a second (at most kMaxRate * 10^6 < 2^60).
// A `rate_less_micro` out of range (a forged segment) is ignored: the whole rate holds.
inline uint64_t rule_rate_micro(const Rule& r) noexcept {
  uint64_t whole = r.rate > (uint64_t{1} << 43) ? (uint64_t{1} << 43) : r.rate;  // no overflow
  uint64_t micro = whole * kRateMicro;
  return r.rate_less_micro < kRateMicro && r.rate_less_micro < micro ? micro - r.rate_less_micro : micro;
}

// Sets a whole rate (clearing any fraction the rule had).
inline void rule_set_rate(Rule& r, uint64_t units_per_s) noexcept {
  r.rate = units_per_s;
  r.rate_less_micro = 0;
}

// Sets an exact rate given in millionths (> 0): `rate` is it rounded up to a whole unit.
inline void rule_set_rate_micro(Rule& r, uint64_t micro) noexcept {
  r.rate = (micro + kRateMicro - 1) / kRateMicro;
  r.rate_less_micro = static_cast<uint32_t>(r.rate * kRateMicro - micro);
}

// True if the rule's ceiling is above its exact rate (it may borrow once resolved).
inline bool rule_ceil_above(const Rule& r) noexcept {
  return r.ceil > r.rate || (r.ceil == r.rate && r.ceil != 0 && rule_rate_micro(r) < r.rate * kRateMicro);
}

// True if the rule may borrow: a ceiling above its rate and a host rule to borrow from.
inline bool rule_shares(const Rule& r) noexcept { return rule_ceil_above(r) && r.host1 != 0; }

struct LimitSet {
  uint32_t count;  // rules in use
  uint32_t pad_;
  Rule rules[kMaxRules];
};
static_assert(sizeof(LimitSet) == 8 + sizeof(Rule) * kMaxRules);

// True if some rule of `set` has a ceiling above its rate (borrows once resolved): only
// then is the host segment worth opening (a start of every process pays for it otherwise).
inline bool limits_have_ceil(const LimitSet& set) noexcept {
  for (uint32_t i = 0; i < set.count && i < kMaxRules; ++i)
    if (rule_ceil_above(set.rules[i])) return true;
  return false;
}

// Which rule (bucket) a call on a descriptor of a kind is charged to:
// a table lookup on the fast path, never a search.
struct BucketTable {
  uint8_t bucket_of[kCallCount][kFdKindCount];  // rule index or kNoBucket
  bool fd_sensitive;  // some call maps differently per fd kind: callers must fstat
};

// A conflict found while building a table: one call in two rules.
struct TableConflict {
  CallId call;
  uint8_t first_rule, second_rule;
};

// Builds the lookup table of `set`.
// @return true, or false with `conflict` filled when a (call, fd kind) pair is
// claimed by two rules. Never allocates.
// Shares: gives each rule of `set` with a ceiling above its rate the host capacity rule
// it borrows from (Rule::host1): the first rule of `capacity` with the same unit whose
// calls and fd kinds overlap its own; 0 if none (it is then held to its rate).
void shares_resolve(LimitSet& set, const LimitSet& capacity) noexcept;

bool bucket_table_build(const LimitSet& set, BucketTable& table, TableConflict* conflict) noexcept;

// The overlap check, one rule at a time (bucket_table_build is these two in a loop;
// bonsaictl's YAML loader uses them to place its diagnostics). Start from a table of
// kNoBucket cells (bucket_table_clear).
void bucket_table_clear(BucketTable& table) noexcept;
// @return true, with `conflict` {call, rule holding it, `index`}, if a (call, fd kind)
// pair of `rule` already has a bucket in `table` (the first in call order).
bool bucket_table_conflict(const BucketTable& table, const Rule& rule, uint8_t index,
                           TableConflict* conflict) noexcept;
// Gives every (call, fd kind) pair of `rule` bucket `index`.
void bucket_table_claim(BucketTable& table, const Rule& rule, uint8_t index) noexcept;

}  // namespace bonsai
