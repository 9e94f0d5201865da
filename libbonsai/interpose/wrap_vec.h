// SPDX-License-Identifier: MIT
// The shapes of vectored and message calls (readv, sendmsg, sendmmsg...): the
// caller's vector cut into pieces of a chunk by the iovec cursor (iov_cursor.h) and
// moved by wrap.h's transfer, or whole messages grouped by chunk (mmsg). Included
// only by interpose/*_calls.cc.
#pragma once
#include <cerrno>
#include <cstddef>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <type_traits>

#include "interpose/iov_cursor.h"
#include "interpose/wrap.h"

namespace bonsai::wrap {

// A read- or write-like call on the caller's vector `v` of `count` entries.
// `call(vec, count, off)` makes the real call on `vec`, which covers the caller's
// bytes from `off` (vec == v and off == 0: the caller's own call).
template <typename Call>
[[gnu::noinline]] ssize_t transfer_iov(CallId id, int fd, const iovec* v, long count, bool cancellable,
                                       bool is_write, int msg_flags, Call&& call) {
  size_t n;
  if (!iov_sum(v, count, n)) [[unlikely]] n = 0;  // the kernel refuses it: one call
  IovCursor cur(v, count);
  auto piece = [&](size_t off, size_t& len) -> ssize_t {
    if (off == 0 && len == n) return call(v, count, size_t{0});
    iovec sub[kPieceIov];
    int k = 0;
    len = cur.piece(off, len, sub, k);
    return call(static_cast<const iovec*>(sub), static_cast<long>(k), off);
  };
  return transfer(id, fd, n, cancellable, is_write, msg_flags, piece);
}

// sendmsg/recvmsg: the message's vector is cut up as above. Pieces after the first
// carry no address and no control data (a stream socket sends them once, with the
// first bytes). A read with control data is never split (it is waited off after
// the call instead): ancillary data must arrive with the bytes it belongs to.
// `call(msghdr*)` makes the real call.
template <typename Msg, typename Call>
[[gnu::noinline]] ssize_t transfer_msg(CallId id, int fd, Msg* m, int flags, bool is_write, Call&& call) {
  if (!m) [[unlikely]] return call(m);  // EFAULT from the kernel
  size_t n;
  if (!iov_sum(m->msg_iov, static_cast<long>(m->msg_iovlen), n)) [[unlikely]] n = 0;
  IovCursor cur(m->msg_iov, static_cast<long>(m->msg_iovlen));
  [[maybe_unused]] int flags_out = 0;
  auto piece = [&](size_t off, size_t& len) -> ssize_t {
    if (off == 0 && len == n) return call(m);
    iovec sub[kPieceIov];
    int k = 0;
    len = cur.piece(off, len, sub, k);
    msghdr h = *m;
    h.msg_iov = sub;
    h.msg_iovlen = static_cast<size_t>(k);
    if (off) {
      h.msg_name = nullptr;
      h.msg_namelen = 0;
      h.msg_control = nullptr;
      h.msg_controllen = 0;
    }
    ssize_t r = call(&h);
    if constexpr (!std::is_const_v<Msg>) {  // what the kernel hands back
      if (!off) {
        m->msg_namelen = h.msg_namelen;
        m->msg_controllen = h.msg_controllen;
      }
      flags_out |= h.msg_flags;
      m->msg_flags = flags_out;
    }
    return r;
  };
  bool splittable = is_write || !m->msg_control || !m->msg_controllen;
  return transfer(id, fd, n, true, is_write, flags, piece, splittable);
}

// ---- sendmmsg / recvmmsg ----

// Bytes moved by the first `done` messages of a sendmmsg/recvmmsg.
inline ssize_t mmsg_moved(int done, const mmsghdr* v) {
  if (done < 0) return -1;
  ssize_t total = 0;
  for (int i = 0; i < done; ++i) total += v[i].msg_len;
  return total;
}

// Bytes one message of a sendmmsg/recvmmsg asks for (0 if the kernel will refuse it).
inline size_t mmsg_bytes(const mmsghdr& m) {
  size_t n;
  return iov_sum(m.msg_hdr.msg_iov, static_cast<long>(m.msg_hdr.msg_iovlen), n) ? n : 0;
}

// sendmmsg/recvmmsg: real calls of as many whole messages as one chunk holds (at
// least one), each after its wait. A message larger than a chunk goes alone: a send
// pays for it before, a receive waits it off after. A call that may block makes
// groups until all messages moved or one group comes back short (recvmmsg's
// MSG_WAITFORONE: later groups do not wait for data); otherwise only the first group
// is made. `call(v, n, flags)` makes the real call.
template <typename Call>
[[gnu::noinline]] int mmsg(CallId id, int fd, mmsghdr* v, unsigned int n, int f, bool is_write, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call(v, n, f);
  Ticket t = ticket_for(id, fd);
  size_t chunk = ticket_chunk(t);
  unsigned int count = n < kIovMax ? n : static_cast<unsigned int>(kIovMax);  // the kernel caps vlen the same way
  size_t all = 0;
  for (unsigned int i = 0; v && i < count && all <= chunk; ++i) all += mmsg_bytes(v[i]);
  // A descriptor that must not wait (runtime/pace.h): whole messages as far as the
  // bucket allows now (at least the first), or EAGAIN and the descriptor held.
  if (v && count && !ticket_covered(t, is_write ? mmsg_bytes(v[0]) : 0)) [[unlikely]] {
    bool cuttable = false;
    int64_t ok = ticket_try_slow(t, fd, is_write ? kPaceWrite : kPaceRead, f & MSG_DONTWAIT,
                                 is_write ? mmsg_bytes(v[0]) : 0, chunk, &cuttable);
    if (ok == 0) {
      ticket_count(t, -1);
      errno = EAGAIN;
      return -1;
    }
    if (ok > 0) {
      unsigned int k = 1;
      if (!is_write) k = count;  // a receive's size is known after it (charged then)
      for (size_t sum = mmsg_bytes(v[0]); is_write && k < count && sum + mmsg_bytes(v[k]) <= static_cast<uint64_t>(ok);)
        sum += mmsg_bytes(v[k++]);
      int r = call(v, k, f);
      ticket_done(t, mmsg_moved(r, v));
      return r;
    }
  }
  if (all <= chunk || !v) [[likely]] {
    ticket_wait(t, true, is_write ? all : 0);
    int r = call(v, n, f);
    ticket_done(t, mmsg_moved(r, v));
    return r;
  }
  bool blocking = may_block(fd, f);
  int flags = f;
  unsigned int done = 0;
  ssize_t bytes = 0;
  int err = 0;
  while (done < count) {
    unsigned int k = 0;
    size_t group = 0;
    while (done + k < count) {
      size_t b = mmsg_bytes(v[done + k]);
      if (k && group + b > chunk) break;
      group += b;
      ++k;
    }
    bool alone = group > chunk;  // one message larger than a chunk
    if (alone && is_write) ticket_prepay(t, group, done == 0);
    else ticket_wait(t, done == 0, is_write ? group : 0);  // once messages moved, the call returns them
    int r = call(v + done, k, flags);
    ssize_t moved = mmsg_moved(r, v + done);
    if (alone && is_write) {
      ticket_refund(t, group, moved);
    } else {
      ticket_charge(t, moved);
      if (alone && moved > 0 && static_cast<size_t>(moved) > chunk) ticket_wait(t, false);
    }
    if (r < 0) {
      err = errno;
      break;
    }
    bytes += moved;
    done += static_cast<unsigned int>(r);
    if (!blocking || static_cast<unsigned int>(r) < k) break;
    if (flags & MSG_WAITFORONE) flags |= MSG_DONTWAIT;  // what the kernel does after one
  }
  if (done == 0 && err) {
    ticket_count(t, -1);
    errno = err;
    return -1;
  }
  ticket_count(t, bytes);
  return static_cast<int>(done);
}

}  // namespace bonsai::wrap
