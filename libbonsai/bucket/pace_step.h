// SPDX-License-Identifier: MIT
// One take of a call that must not wait (a non-blocking descriptor), the library's
// (runtime/pace.cc) and the supervisor's (bonsaictl/supervisor/sv_pace.cc) alike. What decides how
// the call goes is here; what it asks (a thread's credit and batch, a descriptor's turn)
// and what a place becomes (a reservation, a held notification) is its caller's. In order:
//   1. a light write goes ahead of the bucket's queue, on the light clock;
//   2. under shares, a rate with no room lends from the host, if the host and the
//      ceiling let the units go now;
//   3. else the call goes now if nobody is queued and it stays within the depth, or
//      takes a place at the end of the queue, due when the place starts.
// Under shares the ceiling and the host are charged what the rate lets go or queues as it
// is taken (the host sees every unit its takers move). Pure: no syscalls, no allocation.
#pragma once
#include <cstdint>

#include "abi/bucket_state.h"
#include "bucket/share.h"
#include "bucket/token_bucket.h"

namespace bonsai {

// What a call asks of one bucket, sized by its caller.
struct PaceAsk {
  uint64_t light = 0;  // a light descriptor's write (pace_is_light), at most pace_light_max (0: not light)
  uint64_t take = 0;   // units it takes when it goes now
  uint64_t place = 0;  // units of its place at the end of the queue (0: it holds what it needs:
                       // then it goes now with that, taking nothing)
};

// A sharing rule's host bucket and parameters (bucket/share.h); host nullptr: the rule is
// held to its rate.
struct PaceShare {
  BucketState* host = nullptr;
  const ShareParams* p = nullptr;
};

enum class PaceWay : uint8_t { Light, Borrow, Go, Queue };

struct PaceTake {
  PaceWay way = PaceWay::Go;
  uint64_t units = 0;  // taken: what the call may move (Queue: its place)
  uint64_t due = 0;    // when it may go (0: now)
};

// One take from the rule's bucket `s` (and, sharing, its host) at `now` (the host's clock).
// A borrowed take is `place` units (`take` when there is no place): what the rate would
// have given. One CAS loop on the rate, plus the light clock, or the host and the
// ceiling.
PaceTake pace_take(BucketState& s, const BucketParams& p, const PaceShare& share, const PaceAsk& ask,
                   uint64_t now) noexcept;

// When a taker whose place in the bucket's queue ends at `tat` (what its take returned)
// may go: 0 now, else the absolute time (bucket_eligible: within the depth, waking
// `slack_ns` into it). The one answer for the library's takers and the supervisor's held
// calls (bonsaictl/supervisor/sv_ledger.cc). A clock further ahead than any legitimate
// debt (max_ahead_ns) is garbage that bucket_take forgets: it holds nobody.
inline uint64_t pace_when(const BucketParams& p, uint64_t tat, uint64_t now_ns, uint64_t slack_ns) noexcept {
  if (tat > now_ns + p.max_ahead_ns) return 0;
  return bucket_eligible(p, tat, now_ns, slack_ns);
}

// When a call that holds no place yet may go: the bucket's queue as it stands (a call
// charged nothing, or one whose next piece of debt waits for the bucket).
inline uint64_t pace_queue_when(const BucketState& s, const BucketParams& p, uint64_t now_ns,
                                uint64_t slack_ns) noexcept {
  return pace_when(p, s.tat_ns.load(std::memory_order_acquire), now_ns, slack_ns);
}

}  // namespace bonsai
