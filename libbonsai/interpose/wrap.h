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

// True when the call needs nothing from us: set up, no limit on it, nobody counting,
// no limits that may change. Then the wrapper tail-calls glibc with no frame of its
// own (the shapes below keep everything else in noinline slow paths).
inline bool passthrough(CallId id) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  return v && v->table.bucket_of[static_cast<size_t>(id)][0] == kNoBucket;
}

// A call with no size to shape (metadata calls, vectored calls): one real call.
// `call()` makes the real call and returns bytes moved (or -1).
template <typename Ret, typename Call>
[[gnu::noinline]] Ret simple_slow(CallId id, int fd, bool cancellable, Call& call, ssize_t (*moved_of)(Ret)) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(id, fd);
  ticket_wait(t, cancellable);
  Ret r = call();
  ticket_done(t, moved_of(r));
  return r;
}

template <typename Ret, typename Call>
inline Ret simple(CallId id, int fd, bool cancellable, Call&& call, ssize_t (*moved_of)(Ret)) {
  return simple_slow<Ret>(id, fd, cancellable, call, moved_of);
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
[[gnu::noinline]] ssize_t transfer_slow(CallId id, int fd, size_t n, bool cancellable, bool is_write,
                                        int msg_flags, Call& call) {
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

// The limited fast path: this thread still holds prepaid credit on the call's
// bucket and the transfer is smaller than a batch, so no wait and no settling can
// be needed. @return kPassThrough (no limit on the call: just call glibc), the
// credit to spend after the call, or nullptr to take the full path.
inline int64_t* const kPassThrough = reinterpret_cast<int64_t*>(alignof(int64_t) - 1);

inline int64_t* credit_fast(CallId id, size_t n) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  if (!v) return nullptr;
  uint8_t b = v->table.bucket_of[static_cast<size_t>(id)][0];
  if (b == kNoBucket) return kPassThrough;
  if (t_thread.credit_view != v) return nullptr;
  const BucketParams& p = v->params[b];
  int64_t* credit = &t_thread.credit[b];
  if (*credit <= 0 || n > static_cast<size_t>(p.batch) || p.per_call) return nullptr;
  return credit;
}

// Spends `r` bytes of the credit returned by credit_fast. @return r.
inline ssize_t credit_spend(int64_t* credit, ssize_t r) noexcept {
  if (r > 0) lane_add(*credit, -r);
  return r;
}

template <typename Call>
inline ssize_t transfer(CallId id, int fd, size_t n, bool cancellable, bool is_write, int msg_flags,
                        Call&& call) {
  return transfer_slow(id, fd, n, cancellable, is_write, msg_flags, call);
}

// A zero-copy call (sendfile, splice, tee, copy_file_range): the caller loops on
// short results, so a limited call is simply clamped to one chunk. The clamp also
// tames cp's ~2^63-byte copy_file_range requests.
template <typename Call>
[[gnu::noinline]] ssize_t zero_copy_slow(CallId id, int out_fd, size_t n, Call& call) {
  if (!limiter_active()) [[unlikely]] return call(n);
  Ticket t = ticket_for(id, out_fd);
  size_t chunk = ticket_chunk(t);
  ticket_wait(t, false);
  ssize_t r = call(n < chunk ? n : chunk);
  ticket_done(t, r);
  return r;
}

template <typename Call>
inline ssize_t zero_copy(CallId id, int out_fd, size_t n, Call&& call) {
  return zero_copy_slow(id, out_fd, n, call);
}

// First statement of every wrapper: the fast path, a tail call into glibc made
// before anything (a lambda, a frame) is built for the slow path.
#define BONSAI_FAST(id, name, args)                                                  \
  if (::bonsai::wrap::passthrough(::bonsai::CallId::id)) [[likely]] return ::bonsai::real::name args

// The same for a transfer of `n` bytes, with one look at the limits: also goes ahead
// on this thread's prepaid credit (one unlocked subtraction after the call) when no
// wait can be needed.
#define BONSAI_FAST_CREDIT(id, name, n, args)                                        \
  if (int64_t* bonsai_credit_ = ::bonsai::wrap::credit_fast(::bonsai::CallId::id, n)) { \
    if (bonsai_credit_ == ::bonsai::wrap::kPassThrough) return ::bonsai::real::name args; \
    return ::bonsai::wrap::credit_spend(bonsai_credit_, ::bonsai::real::name args);   \
  }

inline size_t iov_total(const iovec* v, long count) {
  size_t total = 0;
  for (long i = 0; v && i < count; ++i) total += v[i].iov_len;
  return total;
}

}  // namespace bonsai::wrap
