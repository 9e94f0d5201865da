// SPDX-License-Identifier: MIT
// Readiness calls: poll/ppoll (+ fortify), select/pselect, epoll_wait/epoll_pwait/epoll_pwait2
// and epoll_ctl. A framed socket whose decoded bytes wait inside the library has
// nothing left in the kernel, so these report it readable themselves, or an
// event-driven receiver would hang. A framed socket whose send buffer holds bytes
// (a non-blocking sender, compress/tx_stream.h) is flushed here and waited for on
// the library's behalf, so its bytes reach the peer whatever the application waits
// for; POLLOUT is reported only once the buffer is empty. Without compression, or
// with nothing held: one or two branches.
#include <atomic>
#include <cerrno>
#include <climits>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/pace_ready.h"
#include "interpose/real.h"
#include "sys/clock.h"

using namespace bonsai;

namespace {

using compress::TxLeft;

inline bool maybe_rx() { return compress::g_rx_on && compress::any_rx_pending(); }
inline bool maybe_tx() { return compress::g_tx_on && compress::any_tx_state(); }
inline bool maybe_pending() { return maybe_rx() || maybe_tx(); }

constexpr short kOut = POLLOUT | POLLWRNORM;
constexpr int kMaxTx = 64;  // send buffers one readiness call waits for (the rest: at the next)

// Time left (ns; -1: no timeout) of a timeout begun at t0.
int64_t left_ns(int64_t timeout, uint64_t t0) {
  if (timeout < 0) return -1;
  uint64_t el = mono_ns() - t0;
  return el >= static_cast<uint64_t>(timeout) ? 0 : timeout - static_cast<int64_t>(el);
}
int to_ms(int64_t ns) {
  if (ns < 0) return -1;
  int64_t ms = (ns + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}
int64_t ms_ns(int ms) { return ms < 0 ? -1 : int64_t{ms} * 1000000; }
// A timeout of ~285 years or more is none (no overflow); an invalid one goes to the real
// call untouched (ts_valid), which fails with EINVAL as it would without the library.
int64_t ts_ns(const timespec* t) {
  if (!t || t->tv_sec >= 9'000'000'000) return -1;
  return int64_t{t->tv_sec} * 1000000000 + t->tv_nsec;
}
bool ts_valid(const timespec* t) { return !t || (t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000); }
timespec ns_ts(int64_t ns) { return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}; }
// select's timeval as Linux reads it: tv_usec past a second is carried into tv_sec;
// either part negative fails with EINVAL (tv_valid: the real call gives it).
bool tv_valid(const timeval* t) { return !t || (t->tv_sec >= 0 && t->tv_usec >= 0); }
int64_t tv_ns(const timeval* t) {
  if (!t || t->tv_sec >= 9'000'000'000 || t->tv_usec >= 9'000'000'000'000'000 / 1000) return -1;
  int64_t ns = int64_t{t->tv_sec} * 1000000000 + int64_t{t->tv_usec} * 1000;
  return ns < 0 ? -1 : ns;  // both parts near their bounds: centuries, none
}

// poll with a timeout in ns (-1 none): to the microsecond unless a whole number of
// milliseconds (a compressed socket's place in a bucket's queue is due between them).
int poll_fine(pollfd* f, nfds_t n, int64_t ns) {
  if (ns < 0 || ns % 1000000 == 0) return real::poll(f, n, to_ms(ns));
  timespec ts = ns_ts(ns);
  return real::ppoll(f, n, &ts, nullptr);
}

// The timeout (ns, -1 none) shortened to wake at `due` (process clock; 0: none).
int64_t until_due(int64_t left, uint64_t due, uint64_t now) {
  if (!due) return left;
  int64_t d = due > now ? static_cast<int64_t>(due - now) : 0;
  return left < 0 || d < left ? d : left;
}

// A poll that asks the kernel (`call(ns)`: the real call with that timeout, -1 none)
// and adds what the library holds: framed sockets with decoded bytes waiting are
// readable; a send buffer holding bytes is flushed, its socket waited for (POLLOUT
// asked on the library's behalf, never reported unless the application asked and
// the buffer is empty). A send buffer the byte cap holds back (Paced) is not waited
// for on its socket: the wait ends when its place in the bucket is due, and is made
// again for what is left of the caller's timeout.
template <typename Call>
int poll_merged(pollfd* f, nfds_t n, int64_t timeout, Call&& call) {
  uint64_t t0 = mono_ns();
  for (;;) {
    bool rx = false;
    for (nfds_t i = 0; i < n && !rx; ++i)
      rx = (f[i].events & (POLLIN | POLLRDNORM)) && compress::fd_rx_pending(f[i].fd);
    nfds_t idx[kMaxTx];
    short orig[kMaxTx];
    bool paced[kMaxTx];
    int nt = 0;
    uint64_t due = 0;
    if (maybe_tx())
      for (nfds_t i = 0; i < n && nt < kMaxTx; ++i) {
        if (!compress::fd_tx_pending(f[i].fd)) continue;
        TxLeft l = compress::tx_flush_now(f[i].fd, &due);
        if (l != TxLeft::Full && l != TxLeft::Paced) continue;
        idx[nt] = i;
        orig[nt] = f[i].events;
        paced[nt] = l == TxLeft::Paced;
        f[i].events = static_cast<short>(paced[nt] ? f[i].events & ~kOut : f[i].events | POLLOUT);
        ++nt;
      }
    if (!nt && !rx) return call(left_ns(timeout, t0));
    int r = call(rx ? 0 : until_due(left_ns(timeout, t0), due, mono_ns()));
    for (int k = 0; k < nt; ++k) f[idx[k]].events = orig[k];
    if (r < 0) return r;
    bool progress = false;
    for (int k = 0; k < nt; ++k) {
      pollfd& p = f[idx[k]];
      if (paced[k]) {  // POLLOUT was not asked: owed once the buffer empties
        if (orig[k] & kOut) compress::tx_withheld(p.fd);
        continue;
      }
      if (!(p.revents & kOut)) continue;
      progress = true;
      bool empty = compress::tx_flush_now(p.fd) == TxLeft::None;  // the socket takes bytes again
      short before = p.revents;
      short keep = empty ? static_cast<short>(orig[k] | ~kOut) : static_cast<short>(~kOut);
      p.revents = static_cast<short>(p.revents & keep);
      if (!empty && (orig[k] & kOut)) compress::tx_withheld(p.fd);
      if (before && !p.revents) --r;
    }
    for (nfds_t i = 0; rx && i < n; ++i) {
      short want = static_cast<short>(f[i].events & (POLLIN | POLLRDNORM));
      if (!want || !compress::fd_rx_pending(f[i].fd)) continue;
      if (!f[i].revents) ++r;
      f[i].revents = static_cast<short>(f[i].revents | want);
    }
    if (r == 0 && (progress || due) && left_ns(timeout, t0) != 0) continue;  // only the library's sockets moved
    return r;
  }
}

// select's sets as the caller gave them: a call made again starts from them.
struct SavedSets {
  fd_set r, w, e;
  SavedSets(const fd_set* rd, const fd_set* wr, const fd_set* ex) {
    if (rd) r = *rd;
    if (wr) w = *wr;
    if (ex) e = *ex;
  }
  void restore(fd_set* rd, fd_set* wr, fd_set* ex) const {
    if (rd) *rd = r;
    if (wr) *wr = w;
    if (ex) *ex = e;
  }
};

// select/pselect the same way (`call(rd, wr, ex, ns)`).
template <typename Call>
int select_merged(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, int64_t timeout, Call&& call) {
  if (nfds > FD_SETSIZE) nfds = FD_SETSIZE;
  SavedSets saved(rd, wr, ex);
  const fd_set &r0 = saved.r, &w0 = saved.w, &e0 = saved.e;
  fd_set wl;
  uint64_t t0 = mono_ns();
  for (bool again = false;; again = true) {
    if (again) saved.restore(rd, wr, ex);
    int pend[64];
    int np = 0;
    for (int fd = 0; rd && fd < nfds && np < 64; ++fd)
      if (FD_ISSET(fd, &r0) && compress::fd_rx_pending(fd)) pend[np++] = fd;
    int tx[kMaxTx];
    int nt = 0;
    uint64_t due = 0;
    fd_set* ws = wr ? wr : &wl;
    if (!wr) FD_ZERO(&wl);
    if (maybe_tx())
      for (int fd = 0; fd < nfds && nt < kMaxTx; ++fd) {
        bool asked = (rd && FD_ISSET(fd, &r0)) || (wr && FD_ISSET(fd, &w0)) || (ex && FD_ISSET(fd, &e0));
        if (!asked || !compress::fd_tx_pending(fd)) continue;
        TxLeft l = compress::tx_flush_now(fd, &due);
        if (l == TxLeft::Paced && wr && FD_ISSET(fd, wr)) {  // held back by the cap: not writable yet
          FD_CLR(fd, wr);
          compress::tx_withheld(fd);
        }
        if (l != TxLeft::Full) continue;
        tx[nt++] = fd;
        FD_SET(fd, ws);
      }
    if (!nt && !np && !due) return call(rd, wr, ex, left_ns(timeout, t0));
    int r = call(rd, nt ? ws : wr, ex, np ? 0 : until_due(left_ns(timeout, t0), due, mono_ns()));
    if (r < 0) return r;
    bool progress = false;
    for (int k = 0; k < nt; ++k) {
      int fd = tx[k];
      if (!FD_ISSET(fd, ws)) continue;
      progress = true;
      bool asked = wr && FD_ISSET(fd, &w0);
      bool empty = compress::tx_flush_now(fd) == TxLeft::None;
      if (asked && empty) continue;
      FD_CLR(fd, ws);
      --r;
      if (asked) compress::tx_withheld(fd);
    }
    for (int i = 0; i < np; ++i)
      if (!FD_ISSET(pend[i], rd)) {
        FD_SET(pend[i], rd);
        ++r;
      }
    if (r == 0 && (progress || due) && left_ns(timeout, t0) != 0) continue;
    return r;
  }
}

// epoll_wait/epoll_pwait/epoll_pwait2: `call(ns)` the real call with that timeout (-1:
// none); `wait(p, n, ns)` a poll (with the
// call's signal mask) on the epoll descriptor and the sockets whose send buffers hold
// bytes, so those are flushed while the application waits, whatever it waits for.
// EPOLLOUT is withheld while a buffer holds bytes and reported once it empties if
// the application was refused meanwhile (an edge-triggered loop would miss it).
template <typename Call, typename Wait>
int epoll_merged(int ep, epoll_event* ev, int max, int64_t timeout, Call&& call, Wait&& wait) {
  uint64_t t0 = mono_ns();
  for (;;) {
    uint32_t pe[64];
    uint64_t pd[64];
    int cap = max < 64 ? max : 64;
    int np = maybe_rx() ? compress::epoll_pending(ep, pe, pd, cap) : 0;
    int tfd[kMaxTx];
    uint64_t tdata[kMaxTx];
    bool busy = false;
    int nt = 0, no = 0;
    int ofd[64];
    uint64_t od[64];
    uint64_t due = 0;  // the earliest place due of a send buffer the cap holds back
    if (maybe_tx()) {
      nt = compress::epoll_tx_pending(ep, tfd, tdata, kMaxTx, &busy, &due);
      no = compress::epoll_tx_owed(ep, ofd, od, cap);
    }
    if (!np && !nt && !no && !due) return call(left_ns(timeout, t0));
    if (!np && !no) {  // wait for the epoll set, a send buffer's socket to take bytes, or a place due
      pollfd p[kMaxTx + 1];
      p[0] = pollfd{ep, POLLIN, 0};
      for (int k = 0; k < nt; ++k) p[k + 1] = pollfd{tfd[k], POLLOUT, 0};
      int w = wait(p, static_cast<nfds_t>(nt + 1), until_due(left_ns(timeout, t0), due, mono_ns()));
      if (w < 0) return w;  // error (EINTR...)
      if (w == 0) {  // the caller's timeout, or a place due: flush, look again
        if (!due || left_ns(timeout, t0) == 0) return 0;
        continue;
      }
      if (!p[0].revents) continue;  // a socket took bytes: flush, look again
    }
    int r = call(0);
    if (r < 0) return r;
    for (int j = 0; j < r; ++j) {  // EPOLLOUT of a socket whose buffer holds bytes: withheld
      if (!(ev[j].events & EPOLLOUT)) continue;
      int k = 0;
      while (k < nt && tdata[k] != ev[j].data.u64) ++k;
      if (k == nt || !compress::fd_tx_pending(tfd[k])) continue;
      compress::tx_withheld(tfd[k]);
      ev[j].events &= ~static_cast<uint32_t>(EPOLLOUT | EPOLLWRNORM);
      if (!ev[j].events) {
        for (int m = j; m + 1 < r; ++m) ev[m] = ev[m + 1];
        --r;
        --j;
      }
    }
    auto add = [&](uint32_t e, uint64_t d) {
      int j = 0;
      while (j < r && ev[j].data.u64 != d) ++j;
      if (j < r) ev[j].events |= e;
      else if (r < max) ev[r++] = epoll_event{e, {.u64 = d}};
      else return false;
      return true;
    };
    for (int i = 0; i < np; ++i) add(EPOLLIN, pd[i]);
    for (int i = 0; i < no; ++i)
      if (!add(EPOLLOUT, od[i])) compress::tx_withheld(ofd[i]);  // no room: owed to the next call
    if (r == 0 && left_ns(timeout, t0) != 0) continue;
    return r;
  }
}

// A wait shortened to a due descriptor's time is made to the microsecond (the places of
// a bucket's queue are a fraction of a millisecond apart; a millisecond timeout would
// serve several at once, in the loop's order): epoll_pwait2 where the kernel has it.
// kNoFine: use the millisecond call (a whole number of milliseconds, or no epoll_pwait2).
constexpr int kNoFine = INT_MIN;
int epoll_fine(int ep, epoll_event* ev, int max, int64_t ns, const sigset_t* s) {
  static constinit std::atomic<bool> missing{false};
  if (ns < 0 || ns % 1000000 == 0 || missing.load(std::memory_order_relaxed)) return kNoFine;
  timespec ts = ns_ts(ns);
  int saved = errno;
  int r = real::epoll_pwait2(ep, ev, max, &ts, s);
  if (r < 0 && errno == ENOSYS) {
    missing.store(true, std::memory_order_relaxed);
    errno = saved;
    return kNoFine;
  }
  return r;
}

// Readiness follows the tokens (pace_ready.h): held directions left out, the wait cut
// to the earliest due time, and made again (for what is left of the caller's timeout)
// when it ends with nothing to report. `call(ns)`: the readiness call as it would be
// made without pacing (compression's merging included), with that timeout.
template <typename Call>
int poll_paced(pollfd* f, nfds_t n, int64_t timeout, Call&& call) {
  if (!pace::any_held()) return call(timeout);
  uint64_t t0 = mono_ns();
  for (;;) {
    uint64_t now = mono_ns();
    pace::PollStrip st;
    uint64_t due = pace::poll_strip(f, n, st, now);
    int64_t left = left_ns(timeout, t0);
    int r = call(until_due(left, due, now));
    pace::poll_restore(f, st);
    if (r == 0 && due && left_ns(timeout, t0) != 0) continue;
    return r;
  }
}

template <typename Call>
int select_paced(int nfds, fd_set* rd, fd_set* wr, fd_set* ex, int64_t timeout, Call&& call) {
  if (!pace::any_held()) return call(timeout);
  SavedSets saved(rd, wr, ex);
  uint64_t t0 = mono_ns();
  for (bool again = false;; again = true) {
    if (again) saved.restore(rd, wr, ex);
    uint64_t now = mono_ns();
    uint64_t due = pace::select_strip(nfds, rd, wr, now);
    int r = call(until_due(left_ns(timeout, t0), due, now));
    if (r == 0 && due && left_ns(timeout, t0) != 0) continue;
    return r;
  }
}

template <typename Call>
int epoll_paced(int ep, epoll_event* ev, int64_t timeout, Call&& call) {
  if (!pace::any_held()) return call(timeout);
  uint64_t t0 = mono_ns();
  for (;;) {
    uint64_t now = mono_ns();
    uint64_t due = pace::epoll_prepare(ep, now);
    int r = call(until_due(left_ns(timeout, t0), due, now));
    if (r <= 0) {
      if (r == 0 && due && left_ns(timeout, t0) != 0) continue;
      return r;
    }
    r = pace::epoll_filter(ep, ev, r, mono_ns());
    if (r == 0 && left_ns(timeout, t0) != 0) continue;  // only held descriptors: wait on
    return r;
  }
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

// Each: nothing to merge and nothing held, the real call; else compression's merging
// (maybe_pending) inside pacing (pace::any_held).
int poll(pollfd* f, nfds_t n, int t) {
  if (!maybe_pending() && !pace::any_held()) [[likely]] return real::poll(f, n, t);
  return poll_paced(f, n, ms_ns(t), [&](int64_t ns0) {
    if (!maybe_pending()) {  // a wait cut short for a due descriptor: to the microsecond
      if (ns0 < 0 || ns0 % 1000000 == 0) return real::poll(f, n, to_ms(ns0));
      timespec ts = ns_ts(ns0);
      return real::ppoll(f, n, &ts, nullptr);
    }
    return poll_merged(f, n, ns0, [&](int64_t ns) { return poll_fine(f, n, ns); });
  });
}

int __poll_chk(pollfd* f, nfds_t n, int t, size_t l) {
  if (!maybe_pending() && !pace::any_held()) [[likely]] return real::__poll_chk(f, n, t, l);
  return poll_paced(f, n, ms_ns(t), [&](int64_t ns0) {
    if (!maybe_pending()) return real::__poll_chk(f, n, to_ms(ns0), l);
    return poll_merged(f, n, ns0, [&](int64_t ns) { return real::__poll_chk(f, n, to_ms(ns), l); });
  });
}

int ppoll(pollfd* f, nfds_t n, const timespec* t, const sigset_t* s) {
  if ((!maybe_pending() && !pace::any_held()) || !ts_valid(t)) [[likely]] return real::ppoll(f, n, t, s);
  auto once = [&](int64_t ns) {
    timespec ts = ns_ts(ns);
    return real::ppoll(f, n, ns < 0 ? nullptr : &ts, s);
  };
  return poll_paced(f, n, ts_ns(t), [&](int64_t ns0) { return maybe_pending() ? poll_merged(f, n, ns0, once) : once(ns0); });
}

int __ppoll_chk(pollfd* f, nfds_t n, const timespec* t, const sigset_t* s, size_t l) {
  if ((!maybe_pending() && !pace::any_held()) || !ts_valid(t)) [[likely]] return real::__ppoll_chk(f, n, t, s, l);
  auto once = [&](int64_t ns) {
    timespec ts = ns_ts(ns);
    return real::__ppoll_chk(f, n, ns < 0 ? nullptr : &ts, s, l);
  };
  return poll_paced(f, n, ts_ns(t), [&](int64_t ns0) { return maybe_pending() ? poll_merged(f, n, ns0, once) : once(ns0); });
}

int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* t) {
  if ((!maybe_pending() && !pace::any_held()) || !tv_valid(t)) [[likely]] return real::select(n, r, w, e, t);
  auto once = [&](fd_set* r2, fd_set* w2, fd_set* e2, int64_t ns) {
    int64_t us = (ns + 999) / 1000;
    timeval tv{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
    return real::select(n, r2, w2, e2, ns < 0 ? nullptr : &tv);
  };
  return select_paced(n, r, w, e, tv_ns(t), [&](int64_t ns0) {
    return maybe_pending() ? select_merged(n, r, w, e, ns0, once) : once(r, w, e, ns0);
  });
}

int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* t, const sigset_t* s) {
  if ((!maybe_pending() && !pace::any_held()) || !ts_valid(t)) [[likely]] return real::pselect(n, r, w, e, t, s);
  auto once = [&](fd_set* r2, fd_set* w2, fd_set* e2, int64_t ns) {
    timespec ts = ns_ts(ns);
    return real::pselect(n, r2, w2, e2, ns < 0 ? nullptr : &ts, s);
  };
  return select_paced(n, r, w, e, ts_ns(t), [&](int64_t ns0) {
    return maybe_pending() ? select_merged(n, r, w, e, ns0, once) : once(r, w, e, ns0);
  });
}

int epoll_wait(int ep, epoll_event* ev, int max, int t) {
  if (!maybe_pending() && !pace::any_held()) [[likely]] return real::epoll_wait(ep, ev, max, t);
  auto once = [&](int64_t ns) {
    int r = epoll_fine(ep, ev, max, ns, nullptr);
    return r != kNoFine ? r : real::epoll_wait(ep, ev, max, to_ms(ns));
  };
  return epoll_paced(ep, ev, ms_ns(t), [&](int64_t ns0) {
    if (!maybe_pending()) return once(ns0);
    return epoll_merged(ep, ev, max, ns0, once, [&](pollfd* p, nfds_t n, int64_t ns) { return poll_fine(p, n, ns); });
  });
}

int epoll_pwait(int ep, epoll_event* ev, int max, int t, const sigset_t* s) {
  if (!maybe_pending() && !pace::any_held()) [[likely]] return real::epoll_pwait(ep, ev, max, t, s);
  auto once = [&](int64_t ns) {
    int r = epoll_fine(ep, ev, max, ns, s);
    return r != kNoFine ? r : real::epoll_pwait(ep, ev, max, to_ms(ns), s);
  };
  return epoll_paced(ep, ev, ms_ns(t), [&](int64_t ns0) {
    if (!maybe_pending()) return once(ns0);
    return epoll_merged(ep, ev, max, ns0, once, [&](pollfd* p, nfds_t n, int64_t ns) {
      timespec ts = ns_ts(ns);
      return real::ppoll(p, n, ns < 0 ? nullptr : &ts, s);
    });
  });
}

// glibc 2.35+: epoll_pwait with a timespec (nanoseconds; null: no timeout).
int epoll_pwait2(int ep, epoll_event* ev, int max, const timespec* t, const sigset_t* s) {
  if ((!maybe_pending() && !pace::any_held()) || !ts_valid(t)) [[likely]] return real::epoll_pwait2(ep, ev, max, t, s);
  auto once = [&](int64_t ns) {
    timespec ts = ns_ts(ns);
    return real::epoll_pwait2(ep, ev, max, ns < 0 ? nullptr : &ts, s);
  };
  return epoll_paced(ep, ev, ts_ns(t), [&](int64_t ns0) {
    if (!maybe_pending()) return once(ns0);
    return epoll_merged(ep, ev, max, ns0, once, [&](pollfd* p, nfds_t n, int64_t ns) {
      timespec ts = ns_ts(ns);
      return real::ppoll(p, n, ns < 0 ? nullptr : &ts, s);
    });
  });
}

// Registrations are remembered for compression (framed sockets' readiness) and for
// pacing (a held direction is taken out of the kernel's interest, pace_ready.h).
int epoll_ctl(int ep, int op, int fd, epoll_event* ev) {
  epoll_event masked;
  epoll_event* use = ev;
  if (ev && op == EPOLL_CTL_MOD && pace::any_held()) [[unlikely]] {
    if (uint32_t bits = pace::epoll_masked(ep, fd)) {
      masked = *ev;
      masked.events &= ~bits;
      use = &masked;
    }
  }
  // Noted before an ADD or MOD is made: once made, the kernel may report the descriptor
  // to another thread at once, whose readiness call must see this registration (a
  // one-shot re-arm noted after it would erase the hold that thread records).
  if (ev && op != EPOLL_CTL_DEL) pace::epoll_note(ep, op, fd, ev->events, ev->data.u64);
  int r = real::epoll_ctl(ep, op, fd, use);
  if (r == 0) {
    if (compress::g_on) [[unlikely]]
      compress::epoll_note(ep, op, fd, ev ? ev->events : 0, ev ? ev->data.u64 : 0);
    if (op == EPOLL_CTL_DEL) pace::epoll_note(ep, op, fd, 0, 0);
  }
  return r;
}

#pragma GCC visibility pop
}  // extern "C"
