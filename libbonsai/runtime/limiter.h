// SPDX-License-Identifier: MIT
// The process's limiter: which bucket a call is charged to, waiting when the thread's
// prepaid credit is spent, and accounting. Runs inside the host process: the inline
// parts are the fast path (no clock, no syscall, no lock, no locked instruction, no
// allocation); everything else is noinline in limiter.cc (the set-up: limiter_setup.cc).
#pragma once
#include <atomic>
#include <cstdint>
#include <sys/types.h>

#include "abi/counters_abi.h"
#include "abi/limits_abi.h"
#include "abi/shm_abi.h"
#include "abi/wait_hist.h"
#include "bucket/limits_view.h"
#include "bucket/token_bucket.h"
#include "runtime/fd_class.h"
#include "runtime/options.h"
#include "sys/clock.h"
#include "sys/word_copy.h"

namespace bonsai {


// Where the limits may change under us (a shared-memory segment): the library
// compares `*seq` with `seen` on every call and calls `refresh` on a change.
struct LimitsWatch {
  const std::atomic<uint64_t>* seq;  // nullptr: limits never change
  void (*refresh)() noexcept;
};

struct Limiter {
  std::atomic<int> state;               // LimiterState
  std::atomic<const LimitsView*> view;  // limits in force, or nullptr
  BucketState* buckets;                 // kMaxRules states (process memory or shm)
  WaitHist* wait_hist;                  // the service's histogram of waits (shm), or nullptr
  ShmShares* shares;                    // shares accounting per rule (shm, or process memory)
  ShmProtect* protect;                  // `protect:` (shm), or nullptr
  std::atomic<uint64_t> protect_calls;  // calls whose durations go to protect->hist (0: none),
                                        // read from the segment at attach and at each limits change
  ProcessCounters* counters;            // this process's counters (process memory or shm);
                                        // nullptr when nobody reads them (nothing is counted)
  LimitsWatch watch;
  std::atomic<uint64_t> seen_seq;
  std::atomic<int> pid;                 // this process (set at set-up and after fork)
  // The view the wrappers' fast paths may use on their own: set once active, when
  // nothing is counted, nothing watched and the limits are not fd-sensitive (an
  // all-kNoBucket view when there are no limits); else nullptr (full path).
  std::atomic<const LimitsView*> fast_view;
  Options opts;
};

enum LimiterState : int { kUninit = 0, kIniting = 1, kActive = 2 };

extern constinit Limiter g_limiter;

// Per-thread state: prepaid credit per bucket of `credit_view` (as it was at generation
// `credit_gen`: the slot may have been reused since), and a counter lane.
struct ThreadState {
  const LimitsView* credit_view;
  uint64_t credit_gen;
  int64_t credit[kMaxRules];
  uint8_t lane_plus1;  // 0: not assigned yet
  bool in_wait;        // a signal handler's call made meanwhile must not wait
};
extern constinit thread_local ThreadState t_thread;

// Runs the one-time setup if not done yet. Safe from any wrapper, including before
// our constructor ran and re-entered. @return true if the limiter is active.
bool limiter_init_once() noexcept;

inline bool limiter_active() noexcept {
  int s = g_limiter.state.load(std::memory_order_acquire);
  if (s == kActive) [[likely]] return true;
  if (s == kUninit) return limiter_init_once();
  return false;
}

void limiter_refresh_slow() noexcept __attribute__((noinline));
// Moves this thread's credit to view `v` (generation `gen`): each bucket's credit to the
// bucket of `v` that continues its rule (bucket/limits_carry.h), or dropped.
void thread_credit_reset(const LimitsView* v, uint64_t gen) noexcept __attribute__((noinline));

// A view's generation (acquire): odd while its slot is being written.
inline uint64_t view_gen(const LimitsView* v) noexcept { return __atomic_load_n(&v->gen, __ATOMIC_ACQUIRE); }
unsigned thread_lane_assign() noexcept __attribute__((noinline));
// This process's CLOCK_MONOTONIC minus the host's (buckets run on the host's clock).
uint64_t limiter_clock_offset() noexcept;
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
  if (g_limiter.watch.seq) [[unlikely]] {
    if (g_limiter.watch.seq->load(std::memory_order_acquire) != g_limiter.seen_seq.load(std::memory_order_relaxed))
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

// Largest transfer worth making in one real call (SIZE_MAX if not byte-limited).
inline size_t ticket_chunk(const Ticket& t) noexcept {
  if (t.bucket == kNoBucket) return SIZE_MAX;
  return static_cast<size_t>(t.params.chunk);
}

// Charges what one real call moved (a call-rate bucket: one call). errno untouched.
inline void ticket_charge(const Ticket& t, ssize_t moved) noexcept {
  if (t.bucket == kNoBucket) return;
  auto units = static_cast<int64_t>(call_units(t.params, moved));
  if (t_thread.credit_gen != t.gen) [[unlikely]] return ticket_charge_stale(t, units);
  int64_t& credit = t_thread.credit[t.bucket];
  lane_add(credit, -units);
  if (credit_needs_settle(credit)) [[unlikely]] ticket_settle_slow(t);
}

// Counts one application call that moved `moved` bytes (< 0: it failed). Nothing
// is counted when nobody can read the counters (no BONSAI_STATS, no service).
inline void ticket_count(const Ticket& t, ssize_t moved) noexcept {
  ProcessCounters* pc = g_limiter.counters;
  if (!pc) return;
  unsigned lane = t_thread.lane_plus1;
  if (!lane) [[unlikely]] lane = thread_lane_assign();
  auto c = static_cast<size_t>(t.call);
  CallLane& cl = pc->lanes[lane - 1].by_call[c];
  if (lane < kCounterLanes) [[likely]] {
    lane_add(cl.calls, 1);
    if (moved > 0) lane_add(cl.bytes, static_cast<uint64_t>(moved));
  } else {  // the shared overflow lane
    __atomic_fetch_add(&cl.calls, 1, __ATOMIC_RELAXED);
    if (moved > 0) __atomic_fetch_add(&cl.bytes, static_cast<uint64_t>(moved), __ATOMIC_RELAXED);
  }
  if (t.waited_ns) [[unlikely]] {
    pc->throttled[c].fetch_add(1, std::memory_order_relaxed);
    pc->wait_ns[c].fetch_add(t.waited_ns, std::memory_order_relaxed);
    wait_hist_add(g_limiter.wait_hist, t.call, t.waited_ns);
  }
}

// Protect (issue 52): a real call's own duration, for the calls of a protected service
// that its `protect:` names. Only in the limited path (a service's processes always take
// it); one relaxed load of process memory for the others. @return the start, or 0.
inline uint64_t protect_start(CallId call) noexcept {
  if (!(g_limiter.protect_calls.load(std::memory_order_relaxed) & call_bit(call))) [[likely]] return 0;
  return mono_ns() | 1;
}
inline void protect_end(uint64_t start) noexcept {
  if (!start) [[likely]] return;
  uint64_t now = mono_ns();
  protect_hist_add(g_limiter.protect, now > start ? now - start : 0);
}
// A call made in several real calls (wrap::transfer_split) is timed as one: the sum of
// its real calls' own times (not the waits between them), added once.
inline uint64_t protect_lap(uint64_t start) noexcept {
  if (!start) [[likely]] return 0;
  uint64_t now = mono_ns();
  return now > start ? now - start : 1;
}
inline void protect_add(uint64_t ns) noexcept {
  if (ns && g_limiter.protect) protect_hist_add(g_limiter.protect, ns);
}
// Re-reads the segment's protect calls (untrusted: unknown bits dropped).
inline void protect_refresh() noexcept {
  ShmProtect* p = g_limiter.protect;
  uint64_t calls = p ? p->calls.load(std::memory_order_relaxed) & (kCallCount >= 64 ? ~CallMask{0} : (CallMask{1} << (kCallCount % 64)) - 1) : 0;
  g_limiter.protect_calls.store(calls, std::memory_order_relaxed);
}

// After the real call: charge and count (return-path accounting).
inline void ticket_done(const Ticket& t, ssize_t moved) noexcept {
  ticket_charge(t, moved);
  ticket_count(t, moved);
}

// Installs `set` as the limits in force (constructor or control plane).
// @return false if the set is invalid (the limits in force stay).
bool limiter_install(const LimitSet& set) noexcept;

// One installer at a time (installs build in shared scratch): @return false if another
// thread (or an interrupted one, in a signal handler) is installing; else true, and the
// caller calls limiter_install_end after its install.
bool limiter_install_begin() noexcept;
void limiter_install_end() noexcept;

// Removes every limit (accounting continues).
void limiter_uninstall() noexcept;

// Recomputes g_limiter.fast_view; call after changing view, counters or watch.
void limiter_update_fast_view() noexcept;

}  // namespace bonsai
