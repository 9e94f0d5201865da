// SPDX-License-Identifier: MIT
// Writes on framed sockets (see compress_hooks.h): send, sendmsg, sendfile/splice
// and sendmmsg made into frames under the connection's lock, byte limits charged
// with wire bytes (compress_meter.h), application and wire bytes both counted.
// errno preserved on success.
#include <cerrno>
#include <sys/socket.h>

#include "compress/tx_loop_budget.h"
#include "compress/tx_send_buffer.h"
#include "compress/tx_stream.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/compressed/compress_meter.h"
#include "runtime/ticket_count.h"
#include "interpose/real.h"

namespace bonsai::compress {

ssize_t tx_send(int fd, const iovec* v, int cnt, int flags, CallId id) noexcept {
  Conn* c = conn_of(fd_state(fd));
  if (!c || (flags & MSG_OOB)) {  // closed meanwhile / urgent data: not part of the stream
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(v);
    msg.msg_iovlen = static_cast<size_t>(cnt);
    return real::sendmsg(fd, &msg, flags);
  }
  // A non-blocking call never waits for the cap: what the bucket allows now, or EAGAIN
  // (compress_meter.h MeterWait::Refuse).
  bool nb = nonblocking(fd, flags);
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, fd, &limited, nb ? MeterWait::Refuse : MeterWait::Wait);
  if (nb) m.loop = loop_budget_of_thread();  // the thread is the loop's: compress/tx_loop_budget.h
  int saved = errno;
  ConnLock lock;
  if (!lock_reaching(lock, c, fd, true)) return -1;
  if (nb) flags |= MSG_DONTWAIT;
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
  bool nb = nonblocking(out, 0);
  Meter meter;
  bool limited;
  WireMeter m = meter_for(meter, id, out, &limited, nb ? MeterWait::Refuse : MeterWait::Wait);
  if (nb) m.loop = loop_budget_of_thread();
  int flags = nb ? MSG_DONTWAIT : 0;
  // The send buffer first: file bytes are read only when the socket can take a frame
  // (a non-blocking call that cannot fails with EAGAIN and reads nothing), and, for a
  // call that must not wait, only when the bucket allows some of it now.
  int e = tx_flush(c->tx, kRealIo, m, out, flags);
  if (!e && m.nowait && m.allow(m.ctx, want) == 0) e = EAGAIN;
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

}  // namespace bonsai::compress
