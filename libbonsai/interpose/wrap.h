// SPDX-License-Identifier: MIT
// The shapes every interposed call takes: wait if the bucket is in debt, make the
// real call, charge what it moved. Included only by interpose/*_calls.cc.
// Fast path: not initialised or no limit on the call -> real call + two counters.
#pragma once
#include <cerrno>
#include <cstddef>
#include <sys/types.h>

#include "runtime/limiter.h"

namespace bonsai::wrap {

// A call with no size to shape (metadata calls, vectored calls): one real call.
// `call()` makes the real call and returns bytes moved (or -1).
template <typename Ret, typename Call>
inline Ret simple(CallId id, int fd, bool cancellable, Call&& call, ssize_t (*moved_of)(Ret)) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(id, fd);
  ticket_wait(t, cancellable);
  Ret r = call();
  ticket_done(t, moved_of(r));
  return r;
}

inline ssize_t moved_ssize(ssize_t r) { return r; }
inline ssize_t moved_none(int r) { return r < 0 ? -1 : 0; }

// How a transfer larger than one bucket chunk is made.
enum class Shape {
  Whole,  // one real call with the full length (datagrams; stdio)
  Clamp,  // one real call, length cut to a chunk (short transfers are normal here)
  Split,  // several real calls of a chunk each, waiting between them, one result
};

// Shape of a read on `fd` (fstat/fcntl: only called for transfers above a chunk).
Shape read_shape(int fd, int msg_flags) noexcept;
// Shape of a write on `fd`.
Shape write_shape(int fd, int msg_flags) noexcept;

// A read- or write-like call on one buffer. `call(offset, len)` makes the real call
// for bytes [offset, offset+len) of the caller's buffer.
template <typename Call>
inline ssize_t transfer(CallId id, int fd, size_t n, bool cancellable, bool is_write, int msg_flags,
                        Call&& call) {
  if (!limiter_active()) [[unlikely]] return call(size_t{0}, n);
  Ticket t = ticket_for(id, fd);
  size_t chunk = ticket_chunk(t);
  if (n <= chunk) [[likely]] {
    ticket_wait(t, cancellable);
    ssize_t r = call(size_t{0}, n);
    ticket_done(t, r);
    return r;
  }
  Shape shape = is_write ? write_shape(fd, msg_flags) : read_shape(fd, msg_flags);
  if (shape != Shape::Split) {
    ticket_wait(t, cancellable);
    ssize_t r = call(size_t{0}, shape == Shape::Clamp ? chunk : n);
    ticket_done(t, r);
    return r;
  }
  size_t done = 0;
  int err = 0;
  while (done < n) {
    size_t len = n - done < chunk ? n - done : chunk;
    ticket_wait(t, cancellable);
    ssize_t r = call(done, len);
    ticket_charge(t, r);
    if (r < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(r);
    if (static_cast<size_t>(r) < len) break;  // short: EOF, full pipe, signal...
  }
  if (done == 0 && err) {
    ticket_count(t, -1);
    errno = err;
    return -1;
  }
  ticket_count(t, static_cast<ssize_t>(done));
  return static_cast<ssize_t>(done);
}

// A zero-copy call (sendfile, splice, tee, copy_file_range): the caller loops on
// short results, so a limited call is simply clamped to one chunk. The clamp also
// tames cp's ~2^63-byte copy_file_range requests.
template <typename Call>
inline ssize_t zero_copy(CallId id, int out_fd, size_t n, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call(n);
  Ticket t = ticket_for(id, out_fd);
  size_t chunk = ticket_chunk(t);
  ticket_wait(t, false);
  ssize_t r = call(n < chunk ? n : chunk);
  ticket_done(t, r);
  return r;
}

inline size_t iov_total(const iovec* v, long count) {
  size_t total = 0;
  for (long i = 0; v && i < count; ++i) total += v[i].iov_len;
  return total;
}

}  // namespace bonsai::wrap
