// SPDX-License-Identifier: MIT
// Putting a sender's frames on the socket, and its send buffer (see tx_send_buffer.h
// and tx_flush in tx_stream.h). No allocation.
#include "compress/tx_send_buffer.h"

#include <cerrno>
#include <cstring>

namespace bonsai::compress {

int tx_send_all(const IoOps& io, const WireMeter& m, int fd, iovec* v, int cnt, int flags, uint64_t* blocked) noexcept {
  int first = 0;
  while (first < cnt) {
    if (v[first].iov_len == 0) {
      ++first;
      continue;
    }
    size_t want = iov_sum(v + first, cnt - first);
    size_t allow = want;
    if (m.allow) {
      uint64_t t0 = io.now_ns();
      allow = m.allow(m.ctx, want);
      *blocked += io.now_ns() - t0;
      // Refused by a meter that must not wait: the rest waits in the send buffer (or,
      // nothing of the frame sent, the whole frame does) until the bucket's turn.
      if (allow == 0 && m.nowait && (flags & MSG_DONTWAIT)) return EAGAIN;
      if (allow == 0 || allow > want) allow = want;
    }
    // Trim the vector to `allow` bytes for this call.
    int n = 0;
    size_t sum = 0;
    iovec saved{};
    int last = first;
    for (; last < cnt && sum < allow; ++last, ++n) sum += v[last].iov_len;
    --last;
    size_t cut = sum - allow;
    if (cut) {
      saved = v[last];
      v[last].iov_len -= cut;
    }
    msghdr msg{};
    msg.msg_iov = v + first;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t r = io.sendmsg(fd, &msg, flags);
    if (cut) v[last] = saved;
    if (m.charge) m.charge(m.ctx, r);
    if (r < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) {
        if (flags & MSG_DONTWAIT) return EAGAIN;  // the caller keeps the rest (send buffer)
        // A blocking write meeting a socket made non-blocking under it: wait.
        pollfd p{fd, POLLOUT, 0};
        uint64_t t0 = io.now_ns();
        io.poll(&p, 1, 1000);
        *blocked += io.now_ns() - t0;
        continue;
      }
      return e;
    }
    auto left = static_cast<size_t>(r);
    while (left && first < cnt) {
      size_t take = left < v[first].iov_len ? left : v[first].iov_len;
      v[first].iov_base = static_cast<uint8_t*>(v[first].iov_base) + take;
      v[first].iov_len -= take;
      left -= take;
      if (v[first].iov_len == 0) ++first;
    }
  }
  return 0;
}

int tx_flush_pending(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags, uint64_t* blocked) noexcept {
  if (!tx_pending(s)) return 0;
  iovec v{s.pend + s.pend_off, tx_pending(s)};
  int e = tx_send_all(io, m, fd, &v, 1, flags, blocked);
  s.pend_off = s.pend_len - v.iov_len;
  if (!tx_pending(s)) s.pend_len = s.pend_off = 0;
  if (e && e != EAGAIN) {  // part of a frame may be on the wire: the stream is over
    s.broken = e;
    s.pend_len = s.pend_off = 0;  // never to be sent: readiness stops waiting for them
  }
  return e;
}

void tx_keep_rest(TxStream& s, const iovec* v, int cnt) noexcept {
  static_assert(kPendSize >= kMaxFrameBytes, "the send buffer holds any one frame whole");
  size_t n = 0;
  for (int i = 0; i < cnt; ++i) {
    std::memcpy(s.pend + n, v[i].iov_base, v[i].iov_len);
    n += v[i].iov_len;
  }
  s.pend_len = n;
  s.pend_off = 0;
}

int tx_flush(TxStream& s, const IoOps& io, const WireMeter& m, int fd, int flags) noexcept {
  if (s.broken) return s.broken;
  uint64_t blocked = 0;
  return tx_flush_pending(s, io, m, fd, flags, &blocked);
}

}  // namespace bonsai::compress
