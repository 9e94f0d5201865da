// SPDX-License-Identifier: MIT
// The process's limiter state, which every part of the limiter reads: `g_limiter` (the
// view in force, the buckets, counters and segments it charges, whether set-up is done,
// the view the wrappers' fast paths may use on their own) and `t_thread`, each thread's
// prepaid credit and counter lane. Data only, defined in limiter_state.cc; the parts that
// act on it: ticket.h (the lookup), ticket_pay.h (waiting and charging), ticket_count.h,
// protect_time.h, limiter_install.h (changing the view), limiter_setup.h (set-up).
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/counters_abi.h"
#include "abi/limits_abi.h"
#include "abi/shm_abi.h"
#include "abi/wait_hist.h"
#include "bucket/limits_view.h"
#include "bucket/token_bucket.h"
#include "runtime/options.h"

namespace bonsai {

// Where the limits may change under us (a shared-memory segment): the library
// compares `*seq` with `seen` on every call and calls `refresh` on a change.
// `seq` moves once in a service member's life (from the pending attach to the segment's
// sequence, limiter_setup.cc), by the one installer: an atomic, read acquire (a plain load
// on x86). `refresh` is read and written by the installer only (limiter_install_begin).
struct LimitsWatch {
  std::atomic<const std::atomic<uint64_t>*> seq;  // nullptr: limits never change
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

}  // namespace bonsai
