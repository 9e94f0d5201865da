// SPDX-License-Identifier: MIT
// Paying for a call with its ticket (ticket.h): before the real call, wait until the
// call's bucket allows it; after it, charge what it moved. Each thread takes batches
// from the bucket in advance as prepaid credit (t_thread), so the inline parts here are
// the fast path (an unlocked add, no clock); the slow paths, noinline in limiter.cc,
// take from the bucket, sleep its debt (re-timed when the limits change under the sleep
// or the fleet lease runs out) and settle a read's overdraft. Under shares the refill
// goes through runtime/share_wait.cc. After the real call, ticket_done pays and counts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

#include "bucket/token_bucket.h"
#include "runtime/limiter_state.h"
#include "runtime/ticket.h"
#include "runtime/ticket_count.h"
#include "sys/lane_add.h"

namespace bonsai {

// Slow path of ticket_wait: take a batch plus what the call needs beyond the
// credit from the bucket, and sleep if the bucket is in debt.
// @return the time waited in ns (0 if none).
// Limits changed while it slept: the ticket moves to the new view (its bucket the one
// that continues its rule, kNoBucket if the rule was removed).
uint64_t ticket_wait_slow(Ticket& t, bool cancellable, uint64_t need) noexcept __attribute__((noinline));
// Shares (bucket/share.h, runtime/share_wait.cc): the refill of a rule with a ceiling
// above its rate and a usable host bucket. @return false (nothing taken) if the rule does
// not share or the host is unusable: the caller then holds it to its rate alone.
bool share_wait_slow(Ticket& t, bool cancellable, uint64_t units, uint64_t* waited) noexcept;
// A read's overdraft on a sharing rule. @return false if the rule does not share.
bool share_settle_slow(const Ticket& t, uint64_t units) noexcept;
// Calls that must not wait on a sharing rule: share_pace (runtime/pace.h).

// Takes a deficit the last call left (see credit_needs_settle) at once.
void ticket_settle_slow(const Ticket& t) noexcept __attribute__((noinline));
// Charges a call whose thread's credit moved to another view meanwhile (a signal
// handler's call, a wait re-timed under new limits): taken from the bucket at once.
void ticket_charge_stale(const Ticket& t, int64_t units) noexcept __attribute__((noinline));

// Waits, before the real call, until the call's bucket allows it. `need`: the bytes
// a write will move at most (paid before it moves); 0 for a read, whose size is
// known only after it (a call-rate bucket ignores it: a call costs one).
inline void ticket_wait(Ticket& t, bool cancellable, uint64_t need = 0) noexcept {
  if (t.bucket == kNoBucket) [[likely]] return;
  int64_t credit = t_thread.credit[t.bucket];
  if (credit > 0 && (static_cast<uint64_t>(credit) >= need || t.params.per_call)) [[likely]] return;
  t.waited_ns += ticket_wait_slow(t, cancellable, need);
}

// How far ahead of now the call's byte bucket has been taken, in depths, less the
// thread's unspent credit: 0 when the bucket is full (or no byte bucket), about 1 when
// the next take waits. Clamped to [0, 4] (the clock may be another writer's garbage).
// One clock read: for the compressed streams' per-chunk choices, not every call.
double ticket_ahead(const Ticket& t) noexcept;

// Charges what one real call moved (a call-rate bucket: one call). errno untouched.
inline void ticket_charge(const Ticket& t, ssize_t moved) noexcept {
  if (t.bucket == kNoBucket) return;
  auto units = static_cast<int64_t>(call_units(t.params, moved));
  if (t_thread.credit_gen != t.gen) [[unlikely]] return ticket_charge_stale(t, units);
  int64_t& credit = t_thread.credit[t.bucket];
  lane_add(credit, -units);
  if (credit_needs_settle(credit)) [[unlikely]] ticket_settle_slow(t);
}

// After the real call: charge and count (return-path accounting).
inline void ticket_done(const Ticket& t, ssize_t moved) noexcept {
  ticket_charge(t, moved);
  ticket_count(t, moved);
}

}  // namespace bonsai
