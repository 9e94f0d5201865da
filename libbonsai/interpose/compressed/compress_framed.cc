// SPDX-License-Identifier: MIT
// Data calls on framed sockets (see compress_hooks.h): frames written and read under
// the connection's lock, byte limits charged with wire bytes (the meter), application
// and wire bytes both counted. errno preserved on success.
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "compress/tx_stream.h"
#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/limiter.h"
#include "sys/clock.h"
#include "sys/raw_syscall.h"

// ThreadSanitizer runs the real function of a blocking call (poll, select, epoll_wait:
// our wrappers) with its interceptors ignored, so it does not see the connection lock
// that tx_flush_now takes there and reports false races. The lock is annotated for it.
#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#define BONSAI_TSAN_ACQUIRE(p) __tsan_acquire(p)
#define BONSAI_TSAN_RELEASE(p) __tsan_release(p)
#else
#define BONSAI_TSAN_ACQUIRE(p) static_cast<void>(p)
#define BONSAI_TSAN_RELEASE(p) static_cast<void>(p)
#endif

namespace bonsai::compress {
namespace {

ssize_t io_sendmsg(int fd, const msghdr* m, int f) { return real::sendmsg(fd, m, f); }
ssize_t io_recv(int fd, void* b, size_t n, int f) { return real::recv(fd, b, n, f); }
int io_poll(pollfd* p, nfds_t n, int t) { return real::poll(p, n, t); }
constexpr IoOps kRealIo{io_sendmsg, io_recv, io_poll, mono_ns};

// ---- wire meter: byte limits see wire bytes ----
struct Meter {
  Ticket t;
  size_t chunk;
  bool is_write;  // sent bytes are paid before they move
};
size_t meter_allow(void* ctx, size_t want) {
  auto* m = static_cast<Meter*>(ctx);
  size_t allow = want < m->chunk ? want : m->chunk;
  ticket_wait(m->t, false, m->is_write ? allow : 0);  // under the connection lock: never a cancellation point
  return allow;
}
void meter_charge(void* ctx, ssize_t moved) { ticket_charge(static_cast<Meter*>(ctx)->t, moved); }
double meter_ahead(void* ctx) { return ticket_ahead(static_cast<Meter*>(ctx)->t); }

// The byte rate of the ticket's bucket (0: none, or a call-rate bucket).
double rate_of(const Ticket& t) {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.view->params[t.bucket];
  if (p.per_call || p.ns_per_unit_q32 == 0) return 0;
  return 1e9 * 4294967296.0 / static_cast<double>(p.ns_per_unit_q32);
}

// The depth of the ticket's bucket in ns (0: none, or a call-rate bucket).
double depth_of(const Ticket& t) {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.view->params[t.bucket];
  return p.per_call ? 0 : static_cast<double>(p.depth_ns);
}

WireMeter meter_for(Meter& m, CallId id, int fd, bool* limited) {
  *limited = limiter_active();
  if (!*limited) return WireMeter{nullptr, nullptr, nullptr};
  m.t = ticket_for(id, fd);
  m.chunk = ticket_chunk(m.t);
  m.is_write = call_dir(id) == CallDir::Write;
  bool capped = m.t.bucket != kNoBucket;
  return WireMeter{meter_allow, meter_charge, &m, capped, capped ? rate_of(m.t) : 0, capped ? meter_ahead : nullptr,
                   capped ? depth_of(m.t) : 0};
}

// Counts the wire bytes of a framed call next to its application bytes (ticket_count).
void count_wire(const Ticket& t, uint64_t wire) {
  ProcessCounters* pc = g_limiter.counters;
  if (pc && wire) pc->wire_bytes[static_cast<size_t>(t.call)].fetch_add(wire, std::memory_order_relaxed);
}

// A meter that charges the bucket but never waits: the library's own flushes (in a
// readiness call, which may have a zero timeout) leave the wait to the next write.
size_t meter_allow_now(void*, size_t want) { return want; }
WireMeter charge_only(Meter& m, int fd, bool* limited) {
  WireMeter w = meter_for(m, CallId::send, fd, limited);
  if (w.allow) w.allow = meter_allow_now;
  return w;
}

// True if a write on fd must not wait: MSG_DONTWAIT or an O_NONBLOCK socket.
bool nonblocking(int fd, int flags) {
  if (flags & MSG_DONTWAIT) return true;
  long fl = raw_syscall3(SYS_fcntl, fd, F_GETFL, 0);
  return fl >= 0 && (fl & O_NONBLOCK);
}

// After a write or flush under tx_mu: the readiness state (tx_pend, owe_out). A
// write refused with EAGAIN is owed an EPOLLOUT; one that took bytes is not (the
// application is not waiting for an edge).
void note_tx(Conn* c, bool refused, bool took = false) {
  conn_update_tx_pending(c);
  if (refused) conn_set_owed(c, true);
  else if (took && c->owe_out.load(std::memory_order_relaxed)) conn_set_owed(c, false);
}

// Takes c's lock for a call on number `fd`. @return false, the lock not held, if this
// thread holds it already (EINTR) or c no longer reaches fd (EBADF: closed and
// recycled meanwhile).
bool lock_reaching(ConnLock& lock, Conn* c, int fd, bool tx) {
  if (!conn_lock(lock, c, tx)) return false;
  if (conn_reaches(c, fd)) return true;
  conn_unlock(lock);
  errno = EBADF;
  return false;
}

// How long close/shutdown may wait to send a send buffer: SO_LINGER's time when it
// is on (0: drop the bytes, as an abortive close does), else kDrainMs.
constexpr int kDrainMs = 2000;
int drain_ms(int fd) {
  linger l{};
  socklen_t len = sizeof l;
  if (getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len) == 0 && l.l_onoff) return l.l_linger * 1000;
  return kDrainMs;
}

}  // namespace

TxLeft tx_flush_now(int fd) noexcept {
  uintptr_t st = fd_state(fd);
  Conn* c = conn_of(st);
  if (!c || !c->tx_pend.load(std::memory_order_acquire)) return TxLeft::None;
  // Never wait for the lock: another thread sending (or this thread, interrupted
  // inside a write by a signal whose handler polls) empties the buffer itself.
  if (pthread_mutex_trylock(&c->tx_mu) != 0) return TxLeft::Busy;
  BONSAI_TSAN_ACQUIRE(&c->tx_mu);
  int saved = errno, old_cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_cancel);
  c->tx_owner.store(static_cast<unsigned long>(pthread_self()), std::memory_order_relaxed);
  bool stale = false;
  if (!conn_reaches(c, fd)) {
    stale = true;  // closed and recycled meanwhile
  } else if (!conn_verify(c, fd)) {
    stale = true;
    drop_state(fd, st);  // the number holds something else now (retired: its buffer is dropped)
  } else {
    Meter meter;
    bool limited;
    WireMeter m = charge_only(meter, fd, &limited);
    tx_flush(c->tx, kRealIo, m, fd, MSG_DONTWAIT | MSG_NOSIGNAL);
    note_tx(c, false);
  }
  bool left = !stale && c->tx_pend.load(std::memory_order_relaxed);
  c->tx_owner.store(0, std::memory_order_relaxed);
  BONSAI_TSAN_RELEASE(&c->tx_mu);
  pthread_mutex_unlock(&c->tx_mu);
  conn_unlocked(c);
  pthread_setcancelstate(old_cancel, &old_cancel);
  errno = saved;
  return left ? TxLeft::Full : TxLeft::None;
}

void tx_before_read(int fd) noexcept {
  if (tx_flush_now(fd) != TxLeft::Full || nonblocking(fd, 0)) return;
  Conn* c = conn_of(fd_state(fd));
  if (!c) return;
  int saved = errno;
  ConnLock lock;
  if (!conn_lock(lock, c, true)) {
    errno = saved;
    return;
  }
  if (conn_reaches(c, fd)) {
    Meter meter;
    bool limited;
    WireMeter m = charge_only(meter, fd, &limited);
    tx_flush(c->tx, kRealIo, m, fd, MSG_NOSIGNAL);  // blocking: the read would block too
    note_tx(c, false);
  }
  conn_unlock(lock);
  errno = saved;
}

namespace {

// Sends fd's send buffer, waiting for the socket until `deadline` (mono ns; 0: by
// SO_LINGER or kDrainMs). `wait_lock` false: skipped if another thread holds the
// connection (at exit, a thread that never comes back may hold it).
void drain(int fd, uint64_t deadline, bool wait_lock) {
  Conn* c = conn_of(fd_state(fd));
  if (!c || !c->tx_pend.load(std::memory_order_acquire)) return;
  int saved = errno;
  ConnLock lock;
  if (!wait_lock) {
    if (pthread_mutex_trylock(&c->tx_mu) != 0) return;
    pthread_mutex_unlock(&c->tx_mu);  // free now: take it the usual way (owner, cancel state)
  }
  if (!conn_lock(lock, c, true)) {  // a signal handler closing the socket its thread is writing
    errno = saved;
    return;
  }
  if (conn_reaches(c, fd) && conn_verify(c, fd)) {
    Meter meter;
    bool limited;
    WireMeter m = charge_only(meter, fd, &limited);
    if (!deadline) deadline = mono_ns() + static_cast<uint64_t>(drain_ms(fd)) * 1000000u;
    for (;;) {
      int e = tx_flush(c->tx, kRealIo, m, fd, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (e != EAGAIN) break;
      uint64_t now = mono_ns();
      if (now >= deadline) break;
      pollfd p{fd, POLLOUT, 0};
      uint64_t left_ms = (deadline - now) / 1000000u + 1;
      if (real::poll(&p, 1, static_cast<int>(left_ms)) < 0 && errno != EINTR) break;
    }
    size_t lost = tx_pending(c->tx);
    if (lost) {
      blog(LogLevel::Warn, "compression: %zu buffered bytes of fd %d not sent before close/shutdown/exit (peer not reading)",
           lost, fd);
      tx_disown(c->tx, EPIPE);
    }
    note_tx(c, false);
  }
  conn_unlock(lock);
  errno = saved;
}

}  // namespace

void tx_drain(int fd) noexcept { drain(fd, 0, true); }

void tx_drain_all() noexcept {
  if (g_tx_pending_conns.load(std::memory_order_acquire) <= 0) return;
  uint64_t deadline = mono_ns() + static_cast<uint64_t>(kDrainMs) * 1000000u;  // for all of them together
  pool_each([&](Conn* c) {
    if (c->tx_pend.load(std::memory_order_acquire)) drain(c->fd.load(std::memory_order_acquire), deadline, false);
  });
}

ssize_t tx_send(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept {
  Conn* c = conn_of(fd_state(fd));
  if (!c || (flags & MSG_OOB)) {  // closed meanwhile / urgent data: not part of the stream
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(v);
    msg.msg_iovlen = static_cast<size_t>(cnt);
    return real::sendmsg(fd, &msg, flags);
  }
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, fd, &limited);
  int saved = errno;
  ConnLock lock;
  if (!lock_reaching(lock, c, fd, true)) return -1;
  if (nonblocking(fd, flags)) flags |= MSG_DONTWAIT;
  uint64_t wire0 = c->tx.wire_bytes;
  ssize_t r = tx_write(c->tx, kRealIo, m, fd, v, cnt, flags);
  int err = errno;
  uint64_t wire = c->tx.wire_bytes - wire0;
  note_tx(c, r < 0 && err == EAGAIN, r > 0);
  conn_unlock(lock);
  errno = err;
  if (limited) ticket_count(meter.t, r), count_wire(meter.t, wire);
  if (r >= 0) errno = saved;
  return r;
}

ssize_t tx_send1(int fd, const void* b, size_t n, int flags, CallId id) noexcept {
  if (flags & MSG_OOB) return real::send(fd, b, n, flags);  // urgent data is not part of the stream
  iovec v{const_cast<void*>(b), n};
  return tx_send(fd, &v, 1, flags, id);
}

ssize_t tx_sendfile(int out, int in, off64_t* off, size_t n, CallId id) noexcept {
  Conn* c = conn_of(fd_state(out));
  size_t want = n < kMaxFrameRaw ? n : kMaxFrameRaw;
  if (want == 0) return 0;
  if (!c) {  // closed meanwhile
    errno = EBADF;
    return -1;
  }
  ConnLock lock;  // file_buf is the connection's
  if (!lock_reaching(lock, c, out, true)) return -1;
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, out, &limited);
  int flags = nonblocking(out, 0) ? MSG_DONTWAIT : 0;
  // The send buffer first: file bytes are read only when the socket can take a frame
  // (a non-blocking call that cannot fails with EAGAIN and reads nothing).
  int e = tx_flush(c->tx, kRealIo, m, out, flags);
  if (e) {
    note_tx(c, e == EAGAIN);
    conn_unlock(lock);
    errno = e;
    return -1;
  }
  // A compressed socket as the source (a proxy splicing between two) gives its decoded
  // bytes, never its frames.
  ssize_t got = off              ? real::pread64(in, c->file_buf, want, *off)
                : rx_framed(in) ? rx_recv1(in, c->file_buf, want, 0, CallId::read)
                                : real::read(in, c->file_buf, want);
  ssize_t r = got;
  if (got > 0) {
    iovec v{c->file_buf, static_cast<size_t>(got)};  // one chunk: taken whole, or refused whole
    uint64_t wire0 = c->tx.wire_bytes;
    r = tx_write(c->tx, kRealIo, m, out, &v, 1, flags);
    if (limited) ticket_count(meter.t, r), count_wire(meter.t, c->tx.wire_bytes - wire0);
    if (r > 0 && off) *off += r;
  }
  int err = errno;
  note_tx(c, false, r > 0);
  conn_unlock(lock);
  errno = err;
  return r;
}

ssize_t rx_recv(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept {
  Conn* c = conn_of(fd_state(fd));
  if (!c) {  // reset (a framed stream the library could not decode), or closed meanwhile
    errno = ECONNRESET;
    return -1;
  }
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, fd, &limited);
  int saved = errno;
  ConnLock lock;
  if (!lock_reaching(lock, c, fd, false)) return -1;
  uint64_t wire0 = c->rx.wire_bytes;
  ssize_t r = rx_read(c->rx, kRealIo, m, fd, v, cnt, flags);
  uint64_t wire = c->rx.wire_bytes - wire0;
  conn_update_pending(c);
  conn_unlock(lock);
  if (limited) ticket_count(meter.t, r), count_wire(meter.t, wire);
  if (r >= 0) errno = saved;
  return r;
}

ssize_t rx_recv1(int fd, void* b, size_t n, int flags, CallId id) noexcept {
  if (flags & MSG_OOB) return real::recv(fd, b, n, flags);
  iovec v{b, n};
  return rx_recv(fd, &v, 1, flags, id);
}

ssize_t rx_recvmsg(int fd, msghdr* msg, int flags) noexcept {
  if (flags & MSG_OOB) return real::recvmsg(fd, msg, flags);
  ssize_t r = rx_recv(fd, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags, CallId::recvmsg);
  if (r >= 0) {
    msg->msg_controllen = 0;
    msg->msg_flags = 0;
  }
  return r;
}

int tx_sendmmsg(int fd, mmsghdr* v, unsigned int n, int flags) noexcept {
  int saved = errno;
  unsigned int i = 0;
  for (; i < n; ++i) {
    const msghdr& h = v[i].msg_hdr;
    int cnt = h.msg_iovlen > 1024 ? 1024 : static_cast<int>(h.msg_iovlen);  // IOV_MAX: the kernel's EMSGSIZE
    ssize_t r = tx_send(fd, h.msg_iov, cnt, flags, CallId::sendmmsg);
    if (r < 0) {
      if (i == 0) return -1;
      break;  // the messages sent so far are the result; the error comes again next call
    }
    v[i].msg_len = static_cast<unsigned int>(r);
    size_t want = 0;
    for (int k = 0; k < cnt; ++k) want += h.msg_iov[k].iov_len;
    if (static_cast<size_t>(r) < want) {  // a short send ends the batch, as the kernel's does
      ++i;
      break;
    }
  }
  errno = saved;
  return static_cast<int>(i);
}

int rx_recvmmsg(int fd, mmsghdr* v, unsigned int n, int flags) noexcept {
  int saved = errno;
  bool one = flags & MSG_WAITFORONE;
  flags &= ~MSG_WAITFORONE;
  unsigned int i = 0;
  for (; i < n; ++i) {
    ssize_t r = rx_recvmsg(fd, &v[i].msg_hdr, i && one ? flags | MSG_DONTWAIT : flags);
    if (r < 0) {
      if (i == 0) return -1;
      break;
    }
    v[i].msg_len = static_cast<unsigned int>(r);
    if (r == 0) {  // end of stream
      ++i;
      break;
    }
  }
  errno = saved;
  return static_cast<int>(i);
}

ssize_t rx_splice(int in, int out, size_t n, unsigned int flags) noexcept {
  Conn* c = conn_of(fd_state(in));
  if (!c) {  // reset (a framed stream the library could not decode), or closed meanwhile
    errno = ECONNRESET;
    return -1;
  }
  if (n == 0) return 0;
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, CallId::read, in, &limited);
  int saved = errno;
  ConnLock lock;
  if (!lock_reaching(lock, c, in, false)) return -1;
  // Peeked, written to the pipe, then taken as far as the pipe took them: the decoded
  // bytes stay in the stream until they are in the pipe, so none is lost to a full one.
  uint8_t buf[16384];
  bool pipe_nb = flags & SPLICE_F_NONBLOCK;
  size_t want = n < sizeof buf ? n : sizeof buf;
  if (pipe_nb && want > 4096) want = 4096;  // a pipe that polls writable takes a page whole
  uint64_t wire0 = c->rx.wire_bytes;
  iovec v{buf, want};
  ssize_t r = rx_read(c->rx, kRealIo, m, in, &v, 1, MSG_PEEK);
  if (r > 0) {
    pollfd p{out, POLLOUT, 0};
    ssize_t w;
    if (pipe_nb && real::poll(&p, 1, 0) == 0) {
      errno = EAGAIN;
      w = -1;
    } else {
      w = real::write(out, buf, static_cast<size_t>(r));
    }
    if (w > 0) {
      iovec take{buf, static_cast<size_t>(w)};
      rx_read(c->rx, kRealIo, WireMeter{nullptr, nullptr, nullptr}, in, &take, 1, 0);  // buffered: no recv
    }
    r = w;
  }
  int err = errno;
  uint64_t wire = c->rx.wire_bytes - wire0;
  conn_update_pending(c);
  conn_unlock(lock);
  if (limited) ticket_count(meter.t, r), count_wire(meter.t, wire);
  errno = r >= 0 ? saved : err;
  return r;
}

}  // namespace bonsai::compress
