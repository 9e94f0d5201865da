// SPDX-License-Identifier: MIT
// Reads on framed sockets (see compress_hooks.h): recv, recvmsg, recvmmsg and splice
// served from decoded frames under the connection's lock, byte limits charged with
// wire bytes (compress_meter.h), application and wire bytes both counted. errno
// preserved on success.
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include "compress/rx_stream.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/compressed/compress_meter.h"
#include "runtime/ticket_count.h"
#include "interpose/real.h"

namespace bonsai::compress {

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
