// SPDX-License-Identifier: MIT
// Supervised calls on descriptors that must not wait (a non-blocking socket, pipe or
// terminal: Go's sockets), paced as the library paces them (libbonsai/runtime/pace.cc,
// docs/limits.md "Non-blocking descriptors"): the call takes one place of one quantum
// (pace_quantum) at the end of its bucket's queue (bucket_take_or_queue) and is held by
// the supervisor until the place is due (bucket_place_due), then made cut to the place
// (a zero-copy call the supervisor makes itself, sv_emulate.h). Each descriptor's
// calls take turns a quantum at a time with every other descriptor's, whatever their
// sizes and however many threads make them (max-min fair); a light descriptor (no
// place for kSvLightAfterNs) with a small write goes ahead within pace_light_reach.
// The arithmetic is the library's (bucket/token_bucket.h); only its use is here.
#pragma once
#include <cstdint>
#include <sys/types.h>

#include "bucket/token_bucket.h"

namespace bonsai::ctl {

// A descriptor that took no place in a queue for this long is light (as the library's
// kLightAfterNs, libbonsai/runtime/pace.cc).
inline constexpr uint64_t kSvLightAfterNs = 100'000'000;

// Whether a call's destination must not wait: a socket, pipe or terminal (`mode`: its
// st_mode) in non-blocking mode (`status_flags`: its F_GETFL), or asked not to wait by
// the call (`dontwait`: MSG_DONTWAIT, SPLICE_F_NONBLOCK). A regular file's O_NONBLOCK
// means nothing to the kernel: never.
bool sv_must_not_wait(mode_t mode, int status_flags, bool dontwait) noexcept;

// The units a paced call takes in each of its byte buckets `a`, `b` (either may be null
// or a call-rate bucket): a `cuttable` call (one the supervisor makes itself, cut to
// what it took) one quantum of the smaller quantum, or less when it asks less; another
// call all it asks (`need`; UINT64_MAX unknown: one quantum, settled after).
uint64_t sv_pace_units(uint64_t need, bool cuttable, const BucketParams* a, const BucketParams* b) noexcept;

// What one paced call took from one bucket.
struct SvPlace {
  uint64_t units = 0;   // units taken: what the call may move (1 in a call-rate bucket)
  uint64_t due = 0;     // when it may go (0: now)
  bool queued = false;  // a place at the end of the bucket's queue (else it went ahead)
};

// Takes for a call asking `need` units, cut to `units` (sv_pace_units) when it waits,
// from bucket `s` at `now`: it goes now with all it asks when the bucket has no queue
// (its clock within the depth), or, `light`, with a write of up to pace_light_max
// within pace_light_reach of the queue; else it takes a place of `units` at the end of
// the queue, due when the place starts. One CAS loop (bucket_take_or_queue).
SvPlace sv_pace_take(BucketState& s, const BucketParams& p, uint64_t need, uint64_t units, bool light,
                     uint64_t now) noexcept;

}  // namespace bonsai::ctl
