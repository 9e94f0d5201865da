// SPDX-License-Identifier: MIT
// Calls that must not wait: a capped call on a non-blocking descriptor (O_NONBLOCK,
// MSG_DONTWAIT) never holds its thread. It moves what the bucket allows now (a shorter
// transfer) or fails with EAGAIN; then its descriptor holds a place in the bucket's queue
// (a reservation of pace_quantum units) and is "held" in that direction until the place
// is due: poll, select and epoll do not report it ready before then and wake their caller
// when it is (interpose/poll_calls.cc, through pace_ready.h). Its next call is granted
// the reserved units. An event loop thus sees a normal descriptor that is slower, and
// the descriptors waiting on one bucket take turns a quantum each: max-min fair among
// descriptors, threads and processes alike (the queue is the bucket's own clock).
// Slow path only: the fast path (thread credit) is unchanged.
#pragma once
#include <cstdint>

#include "bucket/pace_step.h"
#include "runtime/pace_dir.h"
#include "runtime/ticket.h"

namespace bonsai {

// For a call on `fd` in direction `dir` whose thread credit does not cover it: a write
// of `n` bytes (0 for a read) made in pieces of at most `chunk`. `dontwait`:
// MSG_DONTWAIT (or SPLICE_F_NONBLOCK) was given; else the descriptor's O_NONBLOCK
// decides (sockets, pipes, terminals only: a regular file never sees EAGAIN).
// `*cuttable` (in: the caller may shorten the transfer; out: false for a datagram or
// record socket, whose messages move whole).
// @return kPaceBlocking (not a non-blocking call: wait as usual), 0 (refused: fail with
// EAGAIN, the descriptor is held), or the units the call may move now (the thread's
// credit covers them, a whole message included; INT64_MAX for a call-rate bucket).
inline constexpr int64_t kPaceBlocking = -1;
int64_t ticket_try_slow(Ticket& t, int fd, PaceDir dir, bool dontwait, uint64_t n, uint64_t chunk,
                        bool* cuttable) noexcept __attribute__((noinline));

// After a call on a non-blocking descriptor that moved all it was allowed but less than
// asked (`rest` bytes left): its next place in the bucket's queue is taken now, and an
// edge-triggered loop (which waits for an edge after a short transfer) gets one when
// the place is due.
void ticket_pace_next(const Ticket& t, int fd, PaceDir dir, uint64_t rest, uint64_t chunk) noexcept
    __attribute__((noinline));

// A call on `fd` was cut short by the library (a chunk) though the kernel took all it
// was offered: an edge-triggered loop registered for it gets a new edge (errno kept).
void pace_kick(int fd, PaceDir dir) noexcept __attribute__((noinline));

// When the place `fd` holds in direction `dir` of its bucket's queue is due (this
// process's CLOCK_MONOTONIC), or 0 if it holds none (or its slot is busy).
uint64_t pace_due(int fd, PaceDir dir) noexcept __attribute__((noinline));

// Shares (runtime/share_wait.cc): the host bucket and parameters of the ticket's rule
// for pace_take (bucket/pace_step.h), or none if the rule does not share or the host is
// unusable (it is then held to its rate).
PaceShare share_pace(const Ticket& t) noexcept;

// True when the thread's credit covers a call needing `need` units (no wait, no try).
inline bool ticket_covered(const Ticket& t, uint64_t need) noexcept {
  if (t.bucket == kNoBucket) return true;
  int64_t credit = t_thread.credit[t.bucket];
  return credit > 0 && (static_cast<uint64_t>(credit) >= need || t.params.per_call);
}

// Counts a call refused (EAGAIN) or cut short for the cap.
void pace_count_refused(const Ticket& t, bool refused) noexcept;

}  // namespace bonsai
