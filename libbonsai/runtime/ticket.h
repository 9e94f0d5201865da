// SPDX-License-Identifier: MIT
// The ticket: which bucket of the view in force a call is charged to, read as of one
// generation of its view slot (view_ring.h), with the bucket's parameters copied so that
// a call blocking across any number of installs never reads a reused slot. ticket_for is
// the fast path of every limited wrapper (a few loads and a lookup: no clock, no
// syscall, no lock, no locked instruction, no allocation); its slow paths are noinline
// in limiter.cc. Waiting and charging: ticket_pay.h; counting: ticket_count.h.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/calls.h"
#include "bucket/limits_view.h"
#include "bucket/token_bucket.h"
#include "runtime/limiter_state.h"
#include "runtime/view_ring.h"
#include "sys/word_copy.h"

namespace bonsai {

// The limits' sequence moved (a service's live change): installs the new limits, one
// installer at a time (another thread installing: looked at again at the next call).
void limiter_refresh_slow() noexcept __attribute__((noinline));
// Moves this thread's credit to view `v` (generation `gen`): each bucket's credit to the
// bucket of `v` that continues its rule (bucket/limits_carry.h), or dropped.
void thread_credit_reset(const LimitsView* v, uint64_t gen) noexcept __attribute__((noinline));
// True if view `b` (generation `gb`) has the rules of `a` (generation `ga`) in the same
// order (a rate change), both read consistently.
bool limiter_same_rules(const LimitsView* a, uint64_t ga, const LimitsView* b, uint64_t gb) noexcept;

// What a wrapper holds between its wait and its charge. It copies what it needs of the
// view (the bucket's parameters), so a call that blocks across any number of installs
// never reads a reused slot; `gen` tells whether the thread's credit is of its view.
struct Ticket {
  const LimitsView* view;  // nullptr: the call is only accounted
  uint8_t bucket;          // kNoBucket: no limit on this call
  CallId call;
  uint64_t waited_ns;      // 0 if the call did not wait
  uint64_t gen = 0;        // the view's generation when the ticket was made
  BucketParams params{};   // the bucket's, when bucket != kNoBucket
};

// The bucket `call` on descriptor `fd` (< 0: none) has in view `v`, its parameters
// copied, read as of one generation; a slot rewritten meanwhile is read again from the
// view in force. @return false if no consistent read was possible (the call then goes
// unlimited, said once).
bool ticket_read_view(Ticket& t, const LimitsView* v, int fd) noexcept __attribute__((noinline));

// Finds the call's bucket (fd < 0: no descriptor). Fast: a few loads and a lookup.
inline Ticket ticket_for(CallId call, int fd) noexcept {
  if (const std::atomic<uint64_t>* w = g_limiter.watch.seq.load(std::memory_order_acquire)) [[unlikely]] {
    if (w->load(std::memory_order_acquire) != g_limiter.seen_seq.load(std::memory_order_relaxed))
      limiter_refresh_slow();
  }
  const LimitsView* v = g_limiter.view.load(std::memory_order_acquire);
  Ticket t{v, kNoBucket, call, 0};
  if (!v) return t;
  // A seqlock read of the view's slot (its generation before and after, acquire loads
  // between): a slot is rewritten only after kViewRing installs, and then this read is
  // made again from the view in force.
  t.gen = view_gen(v);
  if (!__atomic_load_n(&v->table.fd_sensitive, __ATOMIC_RELAXED)) [[likely]] {
    t.bucket = __atomic_load_n(&v->table.bucket_of[static_cast<size_t>(call)][0], __ATOMIC_ACQUIRE);
    if (t.bucket < kMaxRules) words_load(&t.params, &v->params[t.bucket], sizeof t.params);
    if (((t.gen & 1) || __atomic_load_n(&v->gen, __ATOMIC_RELAXED) != t.gen) && !ticket_read_view(t, v, fd))
      [[unlikely]] return t;
  } else if (!ticket_read_view(t, v, fd)) {
    return t;
  }
  if (t.bucket != kNoBucket && t_thread.credit_gen != t.gen) [[unlikely]] thread_credit_reset(t.view, t.gen);
  return t;
}

// The ticket of another call of the same wrapper (the source of a zero-copy call) in
// the view of `t`: no second refresh, so both tickets index the same view and credit.
inline Ticket ticket_in_view(const Ticket& t, CallId call, int fd) noexcept {
  Ticket s{t.view, kNoBucket, call, 0};
  if (!t.view || call == CallId::count_) return s;
  if (!ticket_read_view(s, t.view, fd) || s.view != t.view || s.gen != t.gen) return Ticket{t.view, kNoBucket, call, 0};
  if (s.bucket != kNoBucket && t_thread.credit_gen != s.gen) [[unlikely]] thread_credit_reset(s.view, s.gen);
  return s;
}

// Largest transfer worth making in one real call (SIZE_MAX if not byte-limited).
inline size_t ticket_chunk(const Ticket& t) noexcept {
  if (t.bucket == kNoBucket) return SIZE_MAX;
  return static_cast<size_t>(t.params.chunk);
}

}  // namespace bonsai
