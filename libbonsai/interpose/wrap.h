// SPDX-License-Identifier: MIT
// The shapes of a limited call: wait if the bucket is in debt, make the real call,
// charge what it moved. Included only by interpose/*_calls.cc (and the compression
// hooks' own calls). Each shape is a noinline template the wrapper's slow path calls
// with a lambda making the real call:
//   transfer      a buffer of n bytes (read, write, send, syscall(SYS_read)...)
//   transfer_split  the one chunk loop (transfer's Split, stdio's pieces)
//   zero_copy     bytes from one descriptor to another (sendfile, splice, tee...)
//   simple        no size to shape, limited by call rate (open, fsync, connect...)
// Vectors and messages (transfer_iov, transfer_msg, mmsg): wrap_vec.h. The fast path
// that comes first in every wrapper (BONSAI_FAST...): wrap_fast.h.
#pragma once
#include <cerrno>
#include <climits>
#include <cstddef>
#include <sys/socket.h>
#include <sys/types.h>
#include <type_traits>

#include "interpose/wrap_fast.h"
#include "runtime/limiter_setup.h"
#include "runtime/protect_time.h"
#include "runtime/ticket.h"
#include "runtime/ticket_count.h"
#include "runtime/ticket_pay.h"
#include "runtime/pace.h"

namespace bonsai::wrap {

// Where a piece of a call starts, `off` bytes into it: the caller's buffer, or a file
// offset (-1: the file's own position, which the pieces advance in turn).
inline char* at(void* b, size_t off) noexcept { return static_cast<char*>(b) + off; }
inline const char* at(const void* b, size_t off) noexcept { return static_cast<const char*>(b) + off; }
template <typename Off>
  requires std::is_integral_v<Off>
inline Off at(Off o, size_t off) noexcept { return o == -1 ? o : static_cast<Off>(o + static_cast<Off>(off)); }

// A call with no size to shape (metadata calls, vectored calls): one real call.
// `call()` makes the real call and returns bytes moved (or -1). `may_eagain`: EAGAIN is
// one of the call's own results on a non-blocking descriptor (accept): there it never
// waits (runtime/pace.h) and the descriptor is held for reading.
template <typename Ret, typename Call>
[[gnu::noinline]] Ret simple(CallId id, int fd, bool cancellable, Call&& call, ssize_t (*moved_of)(Ret),
                             bool may_eagain = false) {
  if (!limiter_active()) [[unlikely]] return call();
  Ticket t = ticket_for(id, fd);
  if (may_eagain && fd >= 0 && !ticket_covered(t, 0)) [[unlikely]] {
    bool cuttable = false;
    if (ticket_try_slow(t, fd, kPaceRead, false, 0, 0, &cuttable) == 0) {
      ticket_count(t, -1);
      errno = EAGAIN;
      return static_cast<Ret>(-1);
    }
  }
  ticket_wait(t, cancellable);
  uint64_t p0 = protect_start(id);  // the real call's own time, after the wait
  Ret r = call();
  protect_end(p0);
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

// The one chunk loop: bytes [0, n) of a call in real calls of at most `chunk` each,
// each after its wait (a write is paid before it moves; only the first may be
// cancelled: once bytes moved, the call returns them). Stops at an error or a short
// piece (EOF, full pipe, signal...). `call(off, len)` moves bytes [off, off+len) and
// may lower `len` (taken by reference when it wants to). Counts the call (ticket_count).
// @return bytes moved, or -1 with the first piece's errno when none moved.
template <typename Call>
ssize_t transfer_split(Ticket& t, size_t n, size_t chunk, bool cancellable, bool is_write, Call&& call) {
  size_t done = 0;
  int err = 0;
  uint64_t own_ns = 0;  // protect: the real calls' own time, one duration for the call
  while (done < n) {
    size_t len = n - done < chunk ? n - done : chunk;
    ticket_wait(t, cancellable && done == 0, is_write ? len : 0);
    uint64_t p0 = protect_start(t.call);
    ssize_t r = call(done, len);
    own_ns += protect_lap(p0);
    ticket_charge(t, r);
    if (r < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(r);
    if (static_cast<size_t>(r) < len) break;
  }
  protect_add(own_ns);
  if (done == 0 && err) {
    ticket_count(t, -1);
    errno = err;
    return -1;
  }
  ticket_count(t, static_cast<ssize_t>(done));
  return static_cast<ssize_t>(done);
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
  // A call that would wait, on a descriptor that must not (runtime/pace.h): it moves
  // what the bucket allows now, or fails with EAGAIN and its descriptor is held.
  if (!ticket_covered(t, is_write ? (n < chunk ? n : chunk) : 0)) [[unlikely]] {
    bool cuttable = splittable && !(msg_flags & MSG_OOB);
    int64_t ok = ticket_try_slow(t, fd, is_write ? kPaceWrite : kPaceRead, msg_flags & MSG_DONTWAIT,
                                 is_write ? n : 0, chunk, &cuttable);
    if (ok == 0) {
      ticket_count(t, -1);
      errno = EAGAIN;
      return -1;
    }
    if (ok > 0) {
      size_t len = !cuttable ? n : n < chunk ? n : chunk;  // a message moves whole, paid for
      if (cuttable && static_cast<uint64_t>(ok) < len) len = static_cast<size_t>(ok);
      size_t asked = len;
      if (len < n) pace_count_refused(t, false);
      uint64_t p0 = protect_start(id);
      ssize_t r = call(size_t{0}, len);
      protect_end(p0);
      ticket_done(t, r);
      if (asked < n && r == static_cast<ssize_t>(asked))
        ticket_pace_next(t, fd, is_write ? kPaceWrite : kPaceRead, n - asked, chunk);
      return r;
    }
  }
  if (n <= chunk) [[likely]] {
    ticket_wait(t, cancellable, is_write ? n : 0);  // a write is paid before it moves
    uint64_t p0 = protect_start(id);  // the real call's own time, after the wait
    ssize_t r = call(size_t{0}, whole);
    protect_end(p0);
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
      uint64_t p0 = protect_start(id);
      r = call(size_t{0}, whole);
      protect_end(p0);
      ticket_charge(t, r);
      if (r > 0 && static_cast<size_t>(r) > chunk) ticket_wait(t, false);
    }
    ticket_count(t, r);
    return r;
  }
  if (shape == Shape::Clamp) {
    ticket_wait(t, cancellable, is_write ? chunk : 0);
    size_t len = chunk;
    uint64_t p0 = protect_start(id);
    ssize_t r = call(size_t{0}, len);
    protect_end(p0);
    ticket_done(t, r);
    if (r == static_cast<ssize_t>(len)) pace_kick(fd, is_write ? kPaceWrite : kPaceRead);  // cut short by us
    return r;
  }
  return transfer_split(t, n, chunk, cancellable, is_write, call);
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
// `dontwait`: the call must not wait (SPLICE_F_NONBLOCK); a non-blocking destination
// (a socket sendfile writes to) is not waited for either (runtime/pace.h).
template <typename Call>
[[gnu::noinline]] ssize_t zero_copy(CallId id, int out_fd, CallId src, int in_fd, size_t n, Call&& call,
                                   bool dontwait = false) {
  if (!limiter_active()) [[unlikely]] return call(n);
  Ticket t = ticket_for(id, out_fd);
  Ticket s = ticket_in_view(t, src, in_fd);
  if (s.bucket == t.bucket) s.bucket = kNoBucket;  // one bucket: charged once
  size_t chunk = ticket_chunk(t);
  size_t schunk = ticket_chunk(s);
  if (schunk < chunk) chunk = schunk;
  size_t len = n < chunk ? n : chunk;
  bool paced = false;  // a non-blocking destination, shortened: its next place is taken
  if (!ticket_covered(t, len)) [[unlikely]] {
    bool cuttable = true;
    int64_t ok = ticket_try_slow(t, out_fd, kPaceWrite, dontwait, len, len, &cuttable);
    if (ok == 0) {
      ticket_count(t, -1);
      errno = EAGAIN;
      return -1;
    }
    if (ok > 0 && static_cast<uint64_t>(ok) < len) {
      len = static_cast<size_t>(ok);
      pace_count_refused(t, false);
    }
    if (ok > 0 && len < n) paced = true;
  }
  if (!ticket_covered(s, 0)) [[unlikely]] {
    bool cuttable = true;
    int64_t ok = ticket_try_slow(s, in_fd, kPaceRead, dontwait, 0, len, &cuttable);
    if (ok == 0) {  // the write side's grant stays in this thread's credit
      ticket_count(t, -1);
      errno = EAGAIN;
      return -1;
    }
    if (ok > 0 && static_cast<uint64_t>(ok) < len) len = static_cast<size_t>(ok);
  }
  ticket_wait(s, false);
  ticket_wait(t, false, len);  // the write side is paid before it moves
  ssize_t r = call(len);
  int err = errno;
  ticket_charge(s, r);
  t.waited_ns += s.waited_ns;
  ticket_done(t, r);
  if (len < n && r == static_cast<ssize_t>(len)) {  // cut short by us, not by the kernel
    if (paced) ticket_pace_next(t, out_fd, kPaceWrite, n - len, chunk);
    else pace_kick(out_fd, kPaceWrite);
  }
  errno = err;
  return r;
}

// The same for a call whose own results include EAGAIN (accept): see `simple`.
#define BONSAI_SIMPLE_SLOW_NB(id, name, fd, cancellable, params, args)                \
  [[gnu::noinline]] static int name##_slow params {                                  \
    return ::bonsai::wrap::simple<int>(::bonsai::CallId::id, fd, cancellable,         \
                                       [&] { return ::bonsai::real::name args; },     \
                                       ::bonsai::wrap::moved_none, true);             \
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
