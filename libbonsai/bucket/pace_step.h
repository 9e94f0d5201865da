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

}  // namespace bonsai
