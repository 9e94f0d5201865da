// SPDX-License-Identifier: MIT
// The shapes every interposed call takes: wait if the bucket is in debt, make the
// real call, charge what it moved. Included only by interpose/*_calls.cc.
// Fast path: not initialised or no limit on the call -> real call + two counters.
#pragma once
#include <cerrno>
#include <climits>
#include <cstddef>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <type_traits>

#include "runtime/limiter.h"

namespace bonsai::wrap {

// The wrapper family, one shape per kind of call, each a noinline template the
// wrapper's slow path calls with a lambda making the real call:
//   transfer      a buffer of n bytes (read, write, send, fread, syscall(SYS_read)...)
//   transfer_iov  an iovec array (readv, preadv2...)
//   transfer_msg  a msghdr (sendmsg, recvmsg)
//   mmsg          an array of messages (sendmmsg, recvmmsg)
//   zero_copy     bytes from one descriptor to another (sendfile, splice, tee...)
//   simple        no size to shape, limited by call rate (open, fsync, connect...)
// and the fast paths that come first in every wrapper: BONSAI_FAST, BONSAI_FAST_ZC,
// BONSAI_FAST_CREDIT (below), BONSAI_SIMPLE_SLOW for a rate-only call's slow path.

// Where a piece of a call starts, `off` bytes into it: the caller's buffer, or a file
// offset (-1: the file's own position, which the pieces advance in turn).
inline char* at(void* b, size_t off) noexcept { return static_cast<char*>(b) + off; }
inline const char* at(const void* b, size_t off) noexcept { return static_cast<const char*>(b) + off; }
template <typename Off>
  requires std::is_integral_v<Off>
inline Off at(Off o, size_t off) noexcept { return o == -1 ? o : static_cast<Off>(o + static_cast<Off>(off)); }

// True when the call needs nothing from us: set up, no limit on it, nobody counting,
// no limits that may change. Then the wrapper tail-calls glibc with no frame of its
// own (the shapes below keep everything else in noinline slow paths).
inline bool unlimited(CallId id) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  return v && v->table.bucket_of[static_cast<size_t>(id)][0] == kNoBucket;
}

// The same for a zero-copy call, which is also charged as a read (`src`) of its
// source: both lookups in the one view.
inline bool unlimited(CallId id, CallId src) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  return v && v->table.bucket_of[static_cast<size_t>(id)][0] == kNoBucket &&
         v->table.bucket_of[static_cast<size_t>(src)][0] == kNoBucket;
}

// A call with no size to shape (metadata calls, vectored calls): one real call.
// `call()` makes the real call and returns bytes moved (or -1).
template <typename Ret, typename Call>
[[gnu::noinline]] Ret simple(CallId id, int fd, bool cancellable, Call&& call, ssize_t (*moved_of)(Ret)) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(id, fd);
  ticket_wait(t, cancellable);
  Ret r = call();
  ticket_done(t, moved_of(r));
  return r;
}

inline ssize_t moved_none(int r) { return r < 0 ? -1 : 0; }

// How a transfer larger than one bucket chunk is made.
enum class Shape {
  Whole,  // one real call with the full length (a message: datagrams, MSG_OOB); a write
          // pays for all of it before the call, a read waits off what it moved after
  Clamp,  // one real call, length cut to a chunk (short transfers are normal here)
  Split,  // several real calls of a chunk each, waiting between them, one result
};

// Shape of a read on `fd` (fstat/fcntl: only called for transfers above a chunk).
Shape read_shape(int fd, int msg_flags) noexcept;
// Shape of a write on `fd`.
Shape write_shape(int fd, int msg_flags) noexcept;
// True when a call on `fd` with `msg_flags` may block (neither O_NONBLOCK nor
// MSG_DONTWAIT): then it may be made in several real calls.
bool may_block(int fd, int msg_flags) noexcept;

// Pays `n` units before a call that cannot be cut, waiting until the bucket allows
// them all; ticket_refund gives back what the call did not move.
inline void ticket_prepay(Ticket& t, size_t n, bool cancellable) noexcept {
  if (t.bucket == kNoBucket) return;
  int64_t units = t.params.per_call ? 1 : static_cast<int64_t>(n < SIZE_MAX / 2 ? n : SIZE_MAX / 2);
  ticket_wait(t, cancellable, static_cast<uint64_t>(units));
  lane_add(t_thread.credit[t.bucket], -units);
}
inline void ticket_refund(const Ticket& t, size_t n, ssize_t moved) noexcept {
  if (t.bucket == kNoBucket || t.params.per_call) return;
  size_t used = moved > 0 ? static_cast<size_t>(moved) : 0;
  if (used < n) lane_add(t_thread.credit[t.bucket], static_cast<int64_t>(n - used));
}

// A read- or write-like call on one stream of `n` bytes. `call(offset, len)` makes
// the real call for bytes [offset, offset+len) of the caller's data; it may lower
// `len` (taken by reference when it wants to) to what one real call can cover, and
// `call(0, n)` must be exactly the caller's call. `splittable` false: a read that
// must not be cut (it becomes Whole).
template <typename Call>
[[gnu::noinline]] ssize_t transfer(CallId id, int fd, size_t n, bool cancellable, bool is_write, int msg_flags,
                                   Call&& call, bool splittable = true) {
  size_t whole = n;  // `call` may lower its length argument: never hand it `n`
  if (!limiter_active()) [[unlikely]] return call(size_t{0}, whole);
  Ticket t = ticket_for(id, fd);
  size_t chunk = ticket_chunk(t);
  if (n <= chunk) [[likely]] {
    ticket_wait(t, cancellable, is_write ? n : 0);  // a write is paid before it moves
    ssize_t r = call(size_t{0}, whole);
    ticket_done(t, r);
    return r;
  }
  Shape shape = is_write ? write_shape(fd, msg_flags) : read_shape(fd, msg_flags);
  if (shape == Shape::Split && !splittable) shape = Shape::Whole;
  if (shape == Shape::Whole) {
    ssize_t r;
    if (is_write) {  // a message is never cut: wait for all of it first
      ticket_prepay(t, n, cancellable);
      r = call(size_t{0}, whole);
      ticket_refund(t, n, r);
    } else {  // its size is known only now: the call takes its time afterwards
      ticket_wait(t, cancellable);
      r = call(size_t{0}, whole);
      ticket_charge(t, r);
      if (r > 0 && static_cast<size_t>(r) > chunk) ticket_wait(t, false);
    }
    ticket_count(t, r);
    return r;
  }
  if (shape == Shape::Clamp) {
    ticket_wait(t, cancellable, is_write ? chunk : 0);
    size_t len = chunk;
    ssize_t r = call(size_t{0}, len);
    ticket_done(t, r);
    return r;
  }
  size_t done = 0;
  int err = 0;
  while (done < n) {
    size_t len = n - done < chunk ? n - done : chunk;
    ticket_wait(t, cancellable && done == 0, is_write ? len : 0);  // once bytes moved, the call returns them
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

// ---- Vectors ----
// A vectored call is cut up like a buffer: each piece is a bounded array on the
// stack covering at most one chunk of the caller's array, walked front to back.

inline constexpr int kPieceIov = 64;     // entries of one piece (1 KiB of stack)
inline constexpr long kIovMax = 1024;    // the kernel's UIO_MAXIOV

// Total length of a vector the kernel would accept. @return false when it would
// refuse it (count, overflow): then it is passed on untouched, as one call.
inline bool iov_sum(const iovec* v, long count, size_t& total) noexcept {
  total = 0;
  if (count < 0 || count > kIovMax || (count > 0 && !v)) return false;
  for (long i = 0; i < count; ++i) {
    if (__builtin_add_overflow(total, v[i].iov_len, &total)) return false;
  }
  return total <= static_cast<size_t>(SSIZE_MAX);
}

// Walks the caller's vector; piece() fills `out` with the entries covering bytes
// [off, off + len) (off never goes back) and returns how many bytes they cover:
// less than `len` only when kPieceIov entries are not enough.
class IovCursor {
 public:
  IovCursor(const iovec* v, long count) noexcept : v_(v), count_(count) {}

  size_t piece(size_t off, size_t len, iovec* out, int& out_count) noexcept {
    while (pos_ < off && idx_ < count_) {  // skip what earlier pieces moved
      size_t left = v_[idx_].iov_len - skip_;
      size_t step = off - pos_ < left ? off - pos_ : left;
      skip_ += step;
      pos_ += step;
      if (skip_ == v_[idx_].iov_len) ++idx_, skip_ = 0;
    }
    size_t covered = 0;
    int k = 0;
    for (long i = idx_, s = static_cast<long>(skip_); i < count_ && covered < len && k < kPieceIov; ++i, s = 0) {
      size_t avail = v_[i].iov_len - static_cast<size_t>(s);
      if (!avail) continue;
      size_t take = len - covered < avail ? len - covered : avail;
      out[k++] = iovec{static_cast<char*>(v_[i].iov_base) + s, take};
      covered += take;
    }
    out_count = k;
    return covered;
  }

 private:
  const iovec* v_;
  long count_;
  long idx_ = 0;     // entry holding byte pos_
  size_t skip_ = 0;  // bytes of v_[idx_] before pos_
  size_t pos_ = 0;
};

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

// The limited fast path: this thread still holds prepaid credit on the call's
// bucket and the transfer is smaller than a batch, so no wait and no settling can
// be needed. @return kUnlimited (no limit on the call: just call glibc), the
// credit to spend after the call, or nullptr to take the full path.
inline int64_t* const kUnlimited = reinterpret_cast<int64_t*>(alignof(int64_t) - 1);

inline int64_t* credit_fast(CallId id, size_t n) noexcept {
  const LimitsView* v = g_limiter.fast_view.load(std::memory_order_acquire);
  if (!v) return nullptr;
  uint8_t b = v->table.bucket_of[static_cast<size_t>(id)][0];
  if (b == kNoBucket) return kUnlimited;
  if (t_thread.credit_view != v) return nullptr;
  const BucketParams& p = v->params[b];
  int64_t* credit = &t_thread.credit[b];
  // The credit covers the whole transfer: no call moves bytes it has not paid for.
  if (*credit <= 0 || n > static_cast<size_t>(*credit) || p.per_call) return nullptr;
  return credit;
}

// Spends `r` bytes of the credit returned by credit_fast. @return r.
inline ssize_t credit_spend(int64_t* credit, ssize_t r) noexcept {
  if (r > 0) lane_add(*credit, -r);
  return r;
}

// The read side of a zero-copy call: the source is read like `read` (or `pread` when
// the call is given an offset pointer for it).
inline CallId source_call(const void* in_off) noexcept { return in_off ? CallId::pread : CallId::read; }

// A zero-copy call (sendfile, splice, tee, copy_file_range): the caller loops on
// short results, so a limited call is simply clamped to one chunk. The clamp also
// tames cp's ~2^63-byte copy_file_range requests. Its bytes leave `in_fd` and enter
// `out_fd`: the call is charged as a write under its own name on `out_fd` and as a read
// (`src`, CallId::count_: no source descriptor, vmsplice) on `in_fd`. Both buckets must
// allow it: the smaller chunk, a wait on each, both charged with what moved; when both
// sides fall in one bucket it is charged once. Counted once, under its own name.
template <typename Call>
[[gnu::noinline]] ssize_t zero_copy(CallId id, int out_fd, CallId src, int in_fd, size_t n, Call&& call) {
  if (!limiter_active()) [[unlikely]] return call(n);
  Ticket t = ticket_for(id, out_fd);
  Ticket s = ticket_in_view(t, src, in_fd);
  if (s.bucket == t.bucket) s.bucket = kNoBucket;  // one bucket: charged once
  size_t chunk = ticket_chunk(t);
  size_t schunk = ticket_chunk(s);
  if (schunk < chunk) chunk = schunk;
  ticket_wait(s, false);
  ticket_wait(t, false, n < chunk ? n : chunk);  // the write side is paid before it moves
  ssize_t r = call(n < chunk ? n : chunk);
  int err = errno;
  ticket_charge(s, r);
  t.waited_ns += s.waited_ns;
  ticket_done(t, r);
  errno = err;
  return r;
}

// First statement of every wrapper: the fast path, a tail call into glibc made
// before anything (a lambda, a frame) is built for the slow path.
#define BONSAI_FAST(id, name, args)                                                  \
  if (::bonsai::wrap::unlimited(::bonsai::CallId::id)) [[likely]] return ::bonsai::real::name args

// The same for a zero-copy call: neither its own bucket nor `src`'s (its source read).
#define BONSAI_FAST_ZC(id, src, name, args)                                          \
  if (::bonsai::wrap::unlimited(::bonsai::CallId::id, src)) [[likely]] return ::bonsai::real::name args

// The same for a transfer of `n` bytes, with one look at the limits: also goes ahead
// on this thread's prepaid credit (one unlocked subtraction after the call) when no
// wait can be needed.
#define BONSAI_FAST_CREDIT(id, name, n, args)                                        \
  if (int64_t* bonsai_credit_ = ::bonsai::wrap::credit_fast(::bonsai::CallId::id, n)) { \
    if (bonsai_credit_ == ::bonsai::wrap::kUnlimited) return ::bonsai::real::name args;   \
    return ::bonsai::wrap::credit_spend(bonsai_credit_, ::bonsai::real::name args);   \
  }

// The slow path of a call limited by call rate only (metadata calls): `name_slow`,
// one real call between the wait and the charge. Its wrapper: BONSAI_FAST, then
// `return name_slow(args)`.
#define BONSAI_SIMPLE_SLOW(id, name, fd, cancellable, params, args)                   \
  [[gnu::noinline]] static int name##_slow params {                                  \
    return ::bonsai::wrap::simple<int>(::bonsai::CallId::id, fd, cancellable,         \
                                       [&] { return ::bonsai::real::name args; },     \
                                       ::bonsai::wrap::moved_none);                   \
  }

}  // namespace bonsai::wrap
