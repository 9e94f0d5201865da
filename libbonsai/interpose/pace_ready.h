// SPDX-License-Identifier: MIT
// Readiness follows the tokens (runtime/pace.h): poll, select and epoll never report a
// held descriptor ready in its held direction before its place in the bucket's queue is
// due, and their timeout is shortened to that time so the caller wakes when it is.
//   poll/select: the held direction is left out of the request for that call.
//   epoll: the held direction is taken out of the kernel's interest (EPOLL_CTL_MOD, with
//   the registration the application made, seen by epoll_ctl) and put back when due; the
//   kernel then reports it again if it is ready (a put-back re-arms an edge-triggered or
//   one-shot registration), so level- and edge-triggered loops both see it once due.
// Nothing of this runs while no descriptor is held (one relaxed load).
#pragma once
#include <cstdint>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "runtime/pace_slots.h"

namespace bonsai::pace {

inline bool any_held() noexcept { return g_pace_held.load(std::memory_order_relaxed) > 0; }

// poll: what was left out of one call, to put back in the caller's array after it.
struct PollStrip {
  static constexpr int kMax = 256;  // entries left out per call (the rest: not paced this call)
  int n = 0;
  uint32_t idx[kMax];
  short bits[kMax];
};
// Leaves held directions out of `f`. @return the earliest due time (process clock), 0 none.
uint64_t poll_strip(pollfd* f, nfds_t n, PollStrip& s, uint64_t now) noexcept;
void poll_restore(pollfd* f, const PollStrip& s) noexcept;

// select: the same on the read and write sets.
uint64_t select_strip(int nfds, fd_set* rd, fd_set* wr, uint64_t now) noexcept;

// epoll: before a wait on `ep`, held directions of its descriptors taken out of the
// kernel's interest and due ones put back. @return the earliest due time, 0 none.
uint64_t epoll_prepare(int ep, uint64_t now) noexcept;
// After it: held directions the kernel reported anyway (held after the prepare, or by
// another thread) removed from `ev` (an emptied event dropped). @return the new count.
int epoll_filter(int ep, epoll_event* ev, int r, uint64_t now) noexcept;
// epoll_ctl: the bits of `fd`'s registration in `ep` taken out for a hold, which an
// EPOLL_CTL_MOD must leave out too; an ADD or MOD noted before it is made (a failed one
// is forgotten at the next EPOLL_CTL_MOD of the library), a DEL after.
uint32_t epoll_masked(int ep, int fd) noexcept;
void epoll_note(int ep, int op, int fd, uint32_t events, uint64_t data) noexcept;

// A descriptor closed (or replaced by dup2): its reservations and registration forgotten.
void on_close(int fd) noexcept;

}  // namespace bonsai::pace
