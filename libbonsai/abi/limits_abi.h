// SPDX-License-Identifier: MIT
// The compact binary form of a set of limits: what the limit parser produces, what
// bonsaictl writes into shared memory and what the library's buckets are built from.
// Plain trivially-copyable data with a fixed layout; no pointers.
#pragma once
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
  uint64_t rate;    // units per second, > 0: the guaranteed rate under a host capacity
  uint64_t burst;   // bucket depth in units; 0 = default depth (see token_bucket.h)
  RateUnit unit;    // bytes moved or calls made
  uint8_t fd_mask;  // bit (1 << FdKind) per kind the rule applies to; kAnyFd if no `fd=`
  uint8_t host1;    // shares: 1 + the host capacity rule it borrows from (0: none; see
                    // shares_resolve); set by whoever knows the host's capacity
  uint8_t pad_[5];
  uint64_t ceil;    // shares: the most it may reach borrowing idle capacity; 0 or <= rate:
                    // no borrowing (a hard cap at `rate`, today's meaning)
};
static_assert(sizeof(Rule) == 40 && std::is_trivially_copyable_v<Rule>);

// True if the rule may borrow: a ceiling above its rate and a host rule to borrow from.
inline bool rule_shares(const Rule& r) noexcept { return r.ceil > r.rate && r.host1 != 0; }

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
    if (set.rules[i].ceil > set.rules[i].rate) return true;
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
