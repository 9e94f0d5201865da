// SPDX-License-Identifier: MIT
// The limits in force as every limiter uses them -- the library in each process and
// bonsaictl's supervisor for programs it cannot preload: the rule set, its (call, fd
// kind) -> bucket table and each bucket's parameters, built in one place, and the
// arithmetic of a call against its bucket (how many units it costs, when it may go).
// Pure: no clock, no syscall, no allocation; safe in signal handlers.
#pragma once
#include <cstdint>
#include <sys/types.h>

#include "abi/bucket_state.h"
#include "abi/limits_abi.h"
#include "bucket/token_bucket.h"

namespace bonsai {

// Room a sleeper leaves for the takes after it (within the depth, see bucket_eligible):
// the default of BONSAI_DEBT_NS (runtime/options.h, checked there) and the supervisor's.
inline constexpr uint64_t kDefaultSlackNs = 2'000'000;

// A snapshot of a limit set. The library publishes views from a ring of slots and
// tells them apart by `gen` (runtime/view_ring.h): a slot is rewritten only under a new,
// odd-while-written generation, so a reader that holds one across a call knows when it
// has been reused. limits_view_build leaves `gen` alone.
struct LimitsView {
  uint64_t gen;
  LimitSet set;
  BucketTable table;
  BucketParams params[kMaxRules];
};
static_assert(sizeof(BucketParams) % 8 == 0 && sizeof(LimitsView) % 8 == 0, "copied word by word (sys/word_copy.h)");

// Builds `v` from `set` (rules past kMaxRules are ignored).
// @return false if two rules claim one call on one fd kind (`v` is then unusable).
bool limits_view_build(const LimitSet& set, LimitsView& v) noexcept;

// The bucket a call on a descriptor of `kind` is charged to, or kNoBucket. `kind` is
// looked at only when the view is fd-sensitive (FdKind::None: no descriptor). A built
// view's table names only its own rules.
inline uint8_t view_bucket(const LimitsView& v, CallId call, FdKind kind) noexcept {
  size_t k = v.table.fd_sensitive ? static_cast<size_t>(kind) : 0;
  return v.table.bucket_of[static_cast<size_t>(call)][k];
}

// Units a call that moved `moved` bytes (< 0: it failed) costs its bucket: one for a
// call-rate bucket, the bytes for a byte bucket.
inline uint64_t call_units(const BucketParams& p, int64_t moved) noexcept {
  if (p.per_call) return 1;
  return moved > 0 ? static_cast<uint64_t>(moved) : 0;
}

// Takes `units` for a call about to go. @return when it may go (0: now).
inline uint64_t bucket_take_due(BucketState& s, const BucketParams& p, uint64_t units, uint64_t now_ns,
                                uint64_t slack_ns) noexcept {
  return bucket_eligible(p, bucket_take(s, p, units, now_ns), now_ns, slack_ns);
}

// A new view replaces `old` over the same states: the states of buckets whose numbering
// the new rules changed start afresh (their clocks forgotten), as a process's own
// buckets do in the library and a supervised process's in the supervisor.
void buckets_renumbered(BucketState* states, size_t n) noexcept;

}  // namespace bonsai
