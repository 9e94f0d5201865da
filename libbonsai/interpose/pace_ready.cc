// SPDX-License-Identifier: MIT
// Readiness follows the tokens (see pace_ready.h).
#include "interpose/pace_ready.h"

#include <cerrno>

#include "interpose/real.h"

namespace bonsai::pace {
namespace {

// A slot found busy (another thread holds its lock) is looked at again this soon.
constexpr uint64_t kBusyRetryNs = 100'000;

// Directions of slot `s` held at `now` (bit d: direction d), and the earliest due time.
unsigned held_now(const PaceSlot& s, uint64_t now, uint64_t* earliest) noexcept {
  unsigned dirs = 0;
  for (unsigned d = 0; d < 2; ++d) {
    const PaceReservation& r = s.res[d];
    if (!(s.held & (1u << d)) || !r.active || r.due_mono <= now) continue;
    dirs |= 1u << d;
    if (!*earliest || r.due_mono < *earliest) *earliest = r.due_mono;
  }
  return dirs;
}

uint32_t dir_bits(unsigned dirs) noexcept {
  uint32_t bits = 0;
  for (unsigned d = 0; d < 2; ++d)
    if (dirs & (1u << d)) bits |= pace_dir_events(d);
  return bits;
}

// The directions a registration (or a poll request) asks for.
unsigned dirs_of(uint32_t events) noexcept {
  unsigned dirs = 0;
  for (unsigned d = 0; d < 2; ++d)
    if (events & pace_dir_events(d)) dirs |= 1u << d;
  return dirs;
}

void release_if_idle(PaceSlot& s, int fd) noexcept {
  bool idle = !s.held && !s.masked && !s.kick;
  pace_unlock(s);
  if (idle) pace_clear_held(fd);
}

}  // namespace

uint64_t poll_strip(pollfd* f, nfds_t n, PollStrip& st, uint64_t now) noexcept {
  uint64_t earliest = 0;
  st.n = 0;
  for (nfds_t i = 0; i < n && st.n < PollStrip::kMax; ++i) {
    PaceSlot* s = pace_slot_if(f[i].fd);
    if (!s || !__atomic_load_n(&s->held, __ATOMIC_RELAXED) || !pace_lock(*s)) continue;
    uint64_t e = 0;
    unsigned dirs = held_now(*s, now, &e) & dirs_of(static_cast<uint16_t>(f[i].events));
    pace_unlock(*s);
    if (!dirs) continue;
    auto bits = static_cast<short>(dir_bits(dirs) & static_cast<uint16_t>(f[i].events));
    st.idx[st.n] = static_cast<uint32_t>(i);
    st.bits[st.n] = bits;
    ++st.n;
    f[i].events = static_cast<short>(f[i].events & ~bits);
    if (!earliest || e < earliest) earliest = e;
  }
  return earliest;
}

void poll_restore(pollfd* f, const PollStrip& st) noexcept {
  for (int k = 0; k < st.n; ++k) f[st.idx[k]].events = static_cast<short>(f[st.idx[k]].events | st.bits[k]);
}

uint64_t select_strip(int nfds, fd_set* rd, fd_set* wr, uint64_t now) noexcept {
  uint64_t earliest = 0;
  if (nfds > FD_SETSIZE) nfds = FD_SETSIZE;
  pace_each_held([&](int fd) {
    if (fd >= nfds) return;
    bool asked_r = rd && FD_ISSET(fd, rd), asked_w = wr && FD_ISSET(fd, wr);
    if (!asked_r && !asked_w) return;
    PaceSlot* s = pace_slot_if(fd);
    if (!s || !pace_lock(*s)) return;
    uint64_t e = 0;
    unsigned dirs = held_now(*s, now, &e);
    pace_unlock(*s);
    bool cut = false;
    if (asked_r && (dirs & (1u << kPaceRead))) FD_CLR(fd, rd), cut = true;
    if (asked_w && (dirs & (1u << kPaceWrite))) FD_CLR(fd, wr), cut = true;
    if (cut && (!earliest || e < earliest)) earliest = e;
  });
  return earliest;
}

uint64_t epoll_prepare(int ep, uint64_t now) noexcept {
  uint64_t earliest = 0;
  pace_each_held([&](int fd) {
    PaceSlot* s = pace_slot_if(fd);
    if (!s || __atomic_load_n(&s->epfd, __ATOMIC_RELAXED) != ep) return;
    if (!pace_lock(*s)) {  // another thread is changing it: look again shortly
      uint64_t soon = now + kBusyRetryNs;
      if (!earliest || soon < earliest) earliest = soon;
      return;
    }
    if (s->epfd != ep) return pace_unlock(*s);
    uint64_t e = 0;
    unsigned held = held_now(*s, now, &e) & dirs_of(s->events);
    if (held && (!earliest || e < earliest)) earliest = e;
    unsigned want = held;
    // A one-shot registration is never disarmed ahead (its re-arming is the
    // application's); one the filter emptied is re-armed once due. An edge-triggered one
    // is not disarmed either: its loop waits for an edge after EAGAIN or a short call and
    // gets one when due (the kick); an edge the kernel makes meanwhile is filtered out.
    if (s->events & EPOLLONESHOT) want &= s->masked;
    else if (s->events & EPOLLET) want = 0;
    // A refused or shortened call's direction, no longer held: a new edge (a put-back
    // re-arms). Not for a one-shot registration: re-arming it is the application's (the
    // thread that was given it may still be serving it).
    unsigned kick = (s->events & EPOLLONESHOT) ? 0 : s->kick & dirs_of(s->events) & ~held;
    if (s->events & EPOLLONESHOT) __atomic_store_n(&s->kick, 0, __ATOMIC_RELAXED);
    if (want != s->masked || kick) {
      epoll_event ev{s->events & ~dir_bits(want), {.u64 = s->data}};
      int saved = errno;
      if (real::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev) == 0) {
        __atomic_store_n(&s->kick, static_cast<uint8_t>(s->kick & ~(kick | (s->masked & ~want))), __ATOMIC_RELAXED);
        __atomic_store_n(&s->masked, static_cast<uint8_t>(want), __ATOMIC_RELAXED);
      } else {  // not registered there any more: forget it
        __atomic_store_n(&s->masked, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->kick, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->epfd, 0, __ATOMIC_RELAXED);
      }
      errno = saved;
    }
    release_if_idle(*s, fd);
  });
  return earliest;
}

int epoll_filter(int ep, epoll_event* ev, int r, uint64_t now) noexcept {
  if (r <= 0 || !any_held()) return r;
  pace_each_held([&](int fd) {
    PaceSlot* s = pace_slot_if(fd);
    if (!s || __atomic_load_n(&s->epfd, __ATOMIC_RELAXED) != ep || !pace_lock(*s)) return;
    uint64_t e = 0;
    unsigned dirs = s->epfd == ep ? held_now(*s, now, &e) : 0;
    uint32_t bits = dir_bits(dirs);
    for (int j = 0; bits && j < r; ++j) {
      if (ev[j].data.u64 != s->data || !(ev[j].events & bits)) continue;
      ev[j].events &= ~bits;
      if (ev[j].events & ~static_cast<uint32_t>(EPOLLET | EPOLLONESHOT)) continue;
      // Emptied: dropped. A one-shot registration the kernel disarmed for it is
      // re-armed when due (epoll_prepare).
      if (s->events & EPOLLONESHOT) __atomic_store_n(&s->masked, static_cast<uint8_t>(s->masked | dirs), __ATOMIC_RELAXED);
      for (int m = j; m + 1 < r; ++m) ev[m] = ev[m + 1];
      --r;
      --j;
    }
    pace_unlock(*s);
  });
  return r;
}

uint32_t epoll_masked(int ep, int fd) noexcept {
  PaceSlot* s = pace_slot_if(fd);
  if (!s || !__atomic_load_n(&s->masked, __ATOMIC_RELAXED) || !pace_lock(*s)) return 0;
  uint32_t bits = s->epfd == ep && !(s->events & EPOLLONESHOT) ? dir_bits(s->masked) : 0;
  pace_unlock(*s);
  return bits;
}

void epoll_note(int ep, int op, int fd, uint32_t events, uint64_t data) noexcept {
  PaceSlot* s = op == EPOLL_CTL_DEL ? pace_slot_if(fd) : pace_slot(fd);
  if (!s || !pace_lock(*s)) return;
  if (op == EPOLL_CTL_DEL) {
    if (s->epfd == ep) {
      __atomic_store_n(&s->epfd, 0, __ATOMIC_RELAXED);
      __atomic_store_n(&s->masked, 0, __ATOMIC_RELAXED);
    }
  } else {
    if (op == EPOLL_CTL_ADD || s->epfd != ep || (events & EPOLLONESHOT)) __atomic_store_n(&s->masked, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->epfd, ep, __ATOMIC_RELAXED);
    s->events = events;
    s->data = data;
  }
  release_if_idle(*s, fd);
}

void on_close(int fd) noexcept {
  PaceSlot* s = pace_slot_if(fd);
  if (!s || !(__atomic_load_n(&s->epfd, __ATOMIC_RELAXED) | __atomic_load_n(&s->held, __ATOMIC_RELAXED) |
              __atomic_load_n(&s->masked, __ATOMIC_RELAXED)))
    return;
  if (!pace_lock(*s)) return;
  __atomic_store_n(&s->held, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->masked, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->kick, 0, __ATOMIC_RELAXED);
  s->res[0].active = false;
  s->res[1].active = false;
  __atomic_store_n(&s->last_place[0], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->last_place[1], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->epfd, 0, __ATOMIC_RELAXED);
  release_if_idle(*s, fd);
}

}  // namespace bonsai::pace
