// SPDX-License-Identifier: MIT
// The turns of supervised calls on descriptors that must not wait (a non-blocking socket, pipe or
// terminal: Go's sockets), paced as the library paces them (libbonsai/runtime/pace.cc,
// docs/reference/limits.md "Non-blocking descriptors", docs/reference/supervised.md): the call takes
// one place of one turn (sv_place_quantum: the library's pace_quantum) at the end of
// its bucket's queue and is held by the supervisor until the place is due (the library's
// own take, bucket/pace_step.h: pace_take), then made cut to it (a zero-copy call the supervisor makes
// itself, sv_emulate.h) or let go whole (its place was all it asks). Descriptors take
// turns whatever their call sizes (what a place holds beyond a call is the descriptor's
// credit: deficit round robin) and however many threads make them (max-min fair); a
// light descriptor (no place lately) with a small write goes ahead on the light clock.
// The arithmetic is the library's (bucket/pace_step.h: light, borrowing under shares,
// going now or taking a place); only the sizes of a call's turn are here.
#pragma once
#include <cstdint>
#include <sys/types.h>

#include "bucket/pace_step.h"
#include "bucket/token_bucket.h"
#include "supervisor/sv_emulate.h"

namespace bonsai::ctl {

// The supervisor's turn: the library's quantum (pace_quantum: a chunk, ~8 ms of rate),
// at most kSvReserveMax; one call in a call-rate bucket. A supervised call costs far
// more than the library's (a seccomp round trip and, cut, a call the supervisor makes:
// ~100 us of CPU between the two against ~1 us): with 0.5 ms turns a static Go file
// server's 40 streams under 5 MB/s took 2.2x the CPU (supervisor and server) of the
// reservations before; with 2 ms turns, as much, as fair.
inline uint64_t sv_place_quantum(const BucketParams& p) noexcept {
  if (p.per_call) return 1;
  uint64_t q = pace_quantum(p);
  return q < kSvReserveMax ? q : kSvReserveMax;
}

// Whether a descriptor is light: the library's rule (pace_is_light).
inline bool sv_pace_light(uint64_t last_place, uint64_t now, uint64_t queue_ns) noexcept {
  return pace_is_light(last_place, now, queue_ns);
}

// Whether a call's destination must not wait: a socket, pipe or terminal (`mode`: its
// st_mode) in non-blocking mode (`status_flags`: its F_GETFL), or asked not to wait by
// the call (`dontwait`: MSG_DONTWAIT, SPLICE_F_NONBLOCK). A regular file's O_NONBLOCK
// means nothing to the kernel: never.
bool sv_must_not_wait(mode_t mode, int status_flags, bool dontwait) noexcept;

// The units a paced call takes in each of its byte buckets `a`, `b` (either may be null
// or a call-rate bucket): a `cuttable` call (one the supervisor makes itself, cut to
// what it took) one quantum of the smaller quantum, or less when it asks less; another
// call all it asks (`need`; UINT64_MAX unknown: one quantum, settled after). Quanta
// here are the supervisor's (sv_place_quantum).
uint64_t sv_pace_units(uint64_t need, bool cuttable, const BucketParams* a, const BucketParams* b) noexcept;

// What one paced call took from one bucket.
struct SvPlace {
  uint64_t units = 0;     // units taken: what the call may move (1 in a call-rate bucket)
  uint64_t due = 0;       // when it may go (0: now)
  bool queued = false;    // a place at the end of the bucket's queue (else it went ahead)
  bool borrowed = false;  // shares: its units were lent by the host
};

// Takes for a call asking `need` units, cut to `units` (sv_pace_units), from bucket `s`
// at `now` (pace_take): `light`, a write of up to pace_light_max goes ahead of a queue,
// all it asks; under shares (`share`) a rate with no room for `place` lends from the
// host; else it goes now with `units` when the bucket has no queue, or takes a place of
// `place` (>= `units`) units at the end of the queue, due when the place starts.
SvPlace sv_pace_take(BucketState& s, const BucketParams& p, uint64_t need, uint64_t units, uint64_t place,
                     bool light, uint64_t now, const PaceShare& share = {}) noexcept;

// One call's turn on a descriptor whose call charges one byte bucket `s`, the descriptor
// holding `credit` units of it: what its last place held beyond its call (deficit round
// robin: a place is always a whole turn, sv_place_quantum, so a descriptor making calls
// smaller than a turn gets as much as one making larger ones). A call the credit covers
// goes now with it (a `cuttable` one with what there is); else it takes (sv_pace_take)
// what is missing and keeps what its place holds beyond the call.
struct SvTurn {
  uint64_t moves = 0;     // what the call may move (a call not cuttable: all it asks, or a turn if unknown)
  uint64_t due = 0;       // when it may go (0: now)
  bool queued = false;    // it took a place in the queue
  uint64_t borrowed = 0;  // shares: units the host lent (its turn)
};
SvTurn sv_pace_turn(BucketState& s, const BucketParams& p, uint64_t need, bool cuttable, bool light,
                    uint64_t& credit, uint64_t now, const PaceShare& share = {}) noexcept;

}  // namespace bonsai::ctl
