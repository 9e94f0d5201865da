// SPDX-License-Identifier: MIT
// Readiness calls: poll/ppoll (+ fortify), select/pselect, epoll_wait/epoll_pwait
// and epoll_ctl. A framed socket whose decoded bytes wait inside the library has
// nothing left in the kernel, so these report it readable themselves, or an
// event-driven receiver would hang. Without BONSAI_COMPRESS_ACCEPT: one branch.
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>

#include "interpose/compress_hooks.h"
#include "interpose/real.h"

using namespace bonsai;

namespace {

inline bool maybe_pending() { return compress::g_rx_on && compress::any_rx_pending(); }

// Makes a poll that first asks the kernel (`call(timeout)`), adding framed sockets
// with bytes waiting in the library.
template <typename Call>
int poll_merged(pollfd* f, nfds_t n, Call&& call, bool blocking) {
  bool any = false;
  for (nfds_t i = 0; i < n && !any; ++i)
    any = (f[i].events & (POLLIN | POLLRDNORM)) && compress::fd_rx_pending(f[i].fd);
  if (!any) return call(blocking);
  int r = call(false);
  if (r < 0) return r;
  for (nfds_t i = 0; i < n; ++i) {
    short want = static_cast<short>(f[i].events & (POLLIN | POLLRDNORM));
    if (!want || !compress::fd_rx_pending(f[i].fd)) continue;
    if (!f[i].revents) ++r;
    f[i].revents = static_cast<short>(f[i].revents | want);
  }
  return r;
}

template <typename Call>
int select_merged(int nfds, fd_set* rd, Call&& call) {
  int pend[64];
  int np = 0;
  for (int fd = 0; rd && fd < nfds && fd < FD_SETSIZE && np < 64; ++fd)
    if (FD_ISSET(fd, rd) && compress::fd_rx_pending(fd)) pend[np++] = fd;
  if (!np) return call(true);
  int r = call(false);
  if (r < 0) return r;
  for (int i = 0; i < np; ++i)
    if (!FD_ISSET(pend[i], rd)) {
      FD_SET(pend[i], rd);
      ++r;
    }
  return r;
}

template <typename Call>
int epoll_merged(int ep, epoll_event* ev, int max, Call&& call) {
  uint32_t pe[64];
  uint64_t pd[64];
  int np = compress::epoll_pending(ep, pe, pd, max < 64 ? max : 64);
  if (!np) return call(true);
  int r = call(false);
  if (r < 0) return r;
  for (int i = 0; i < np; ++i) {
    int j = 0;
    while (j < r && ev[j].data.u64 != pd[i]) ++j;
    if (j < r) ev[j].events |= EPOLLIN;
    else if (r < max) ev[r++] = epoll_event{pe[i], {.u64 = pd[i]}};
  }
  return r;
}

constexpr timespec kZeroTs{0, 0};

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int poll(pollfd* f, nfds_t n, int t) {
  if (!maybe_pending()) [[likely]] return real::poll(f, n, t);
  return poll_merged(f, n, [&](bool b) { return real::poll(f, n, b ? t : 0); }, true);
}

int __poll_chk(pollfd* f, nfds_t n, int t, size_t l) {
  if (!maybe_pending()) [[likely]] return real::__poll_chk(f, n, t, l);
  return poll_merged(f, n, [&](bool b) { return real::__poll_chk(f, n, b ? t : 0, l); }, true);
}

int ppoll(pollfd* f, nfds_t n, const timespec* t, const sigset_t* s) {
  if (!maybe_pending()) [[likely]] return real::ppoll(f, n, t, s);
  return poll_merged(f, n, [&](bool b) { return real::ppoll(f, n, b ? t : &kZeroTs, s); }, true);
}

int __ppoll_chk(pollfd* f, nfds_t n, const timespec* t, const sigset_t* s, size_t l) {
  if (!maybe_pending()) [[likely]] return real::__ppoll_chk(f, n, t, s, l);
  return poll_merged(f, n, [&](bool b) { return real::__ppoll_chk(f, n, b ? t : &kZeroTs, s, l); }, true);
}

int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* t) {
  if (!maybe_pending()) [[likely]] return real::select(n, r, w, e, t);
  return select_merged(n, r, [&](bool b) {
    timeval z{0, 0};
    return real::select(n, r, w, e, b ? t : &z);
  });
}

int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* t, const sigset_t* s) {
  if (!maybe_pending()) [[likely]] return real::pselect(n, r, w, e, t, s);
  return select_merged(n, r, [&](bool b) { return real::pselect(n, r, w, e, b ? t : &kZeroTs, s); });
}

int epoll_wait(int ep, epoll_event* ev, int max, int t) {
  if (!maybe_pending()) [[likely]] return real::epoll_wait(ep, ev, max, t);
  return epoll_merged(ep, ev, max, [&](bool b) { return real::epoll_wait(ep, ev, max, b ? t : 0); });
}

int epoll_pwait(int ep, epoll_event* ev, int max, int t, const sigset_t* s) {
  if (!maybe_pending()) [[likely]] return real::epoll_pwait(ep, ev, max, t, s);
  return epoll_merged(ep, ev, max, [&](bool b) { return real::epoll_pwait(ep, ev, max, b ? t : 0, s); });
}

int epoll_ctl(int ep, int op, int fd, epoll_event* ev) {
  int r = real::epoll_ctl(ep, op, fd, ev);
  if (compress::g_rx_on && r == 0) [[unlikely]]
    compress::epoll_note(ep, op, fd, ev ? ev->events : 0, ev ? ev->data.u64 : 0);
  return r;
}

#pragma GCC visibility pop
}  // extern "C"
