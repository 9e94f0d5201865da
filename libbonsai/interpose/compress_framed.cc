// SPDX-License-Identifier: MIT
// Data calls on framed sockets (see compress_hooks.h): frames written and read under
// the connection's lock, byte limits charged with wire bytes (the meter), application
// and wire bytes both counted. errno preserved on success.
#include <cerrno>

#include "compress/tx_stream.h"
#include "interpose/compress_glue.h"
#include "interpose/compress_hooks.h"
#include "interpose/real.h"
#include "runtime/limiter.h"
#include "sys/clock.h"

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
};
size_t meter_allow(void* ctx, size_t want) {
  auto* m = static_cast<Meter*>(ctx);
  ticket_wait(m->t, false);  // under the connection lock: never a cancellation point
  return want < m->chunk ? want : m->chunk;
}
void meter_charge(void* ctx, ssize_t moved) { ticket_charge(static_cast<Meter*>(ctx)->t, moved); }

WireMeter meter_for(Meter& m, CallId id, int fd, bool* limited) {
  *limited = limiter_active();
  if (!*limited) return WireMeter{nullptr, nullptr, nullptr};
  m.t = ticket_for(id, fd);
  m.chunk = ticket_chunk(m.t);
  return WireMeter{meter_allow, meter_charge, &m};
}

// Counts the wire bytes of a framed call next to its application bytes (ticket_count).
void count_wire(const Ticket& t, uint64_t wire) {
  ProcessCounters* pc = g_limiter.counters;
  if (pc && wire) pc->wire_bytes[static_cast<size_t>(t.call)].fetch_add(wire, std::memory_order_relaxed);
}

}  // namespace

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
  if (!conn_lock(lock, c, true)) return -1;
  if (c->fd.load(std::memory_order_acquire) != fd) {  // closed and recycled meanwhile
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
  uint64_t wire0 = c->tx.wire_bytes;
  ssize_t r = tx_write(c->tx, kRealIo, m, fd, v, cnt, flags);
  uint64_t wire = c->tx.wire_bytes - wire0;
  conn_unlock(lock);
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
  if (!conn_lock(lock, c, true)) return -1;
  if (c->fd.load(std::memory_order_acquire) != out) {
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
  ssize_t got = off ? real::pread64(in, c->file_buf, want, *off) : real::read(in, c->file_buf, want);
  ssize_t r = got;
  if (got > 0) {
    Meter meter;
    bool limited;
    WireMeter m = meter_for(meter, id, out, &limited);
    iovec v{c->file_buf, static_cast<size_t>(got)};
    uint64_t wire0 = c->tx.wire_bytes;
    r = tx_write(c->tx, kRealIo, m, out, &v, 1, 0);
    if (limited) ticket_count(meter.t, r), count_wire(meter.t, c->tx.wire_bytes - wire0);
    if (r > 0 && off) *off += r;
  }
  conn_unlock(lock);
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
  if (!conn_lock(lock, c, false)) return -1;
  if (c->fd.load(std::memory_order_acquire) != fd) {
    conn_unlock(lock);
    errno = EBADF;
    return -1;
  }
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

}  // namespace bonsai::compress
