// SPDX-License-Identifier: MIT
// The supervisor's ledger: the processes and threads of its trees (their slots, pidfds
// and I/O counters, dropped when they end) and what each owes, with charge and pay.
// The arithmetic is the library's (bucket/limits_view.h: a call's units; bucket/debt.h:
// owed units taken in pieces; bucket/pace_step.h: when a taker may go; bucket/share.h:
// a sharing rule's ceiling, rate and borrowing); what is the ledger's own is when it
// learns what a call moved: at the thread's next notification, from its I/O counters
// (settle), so a write prepays what it asks and gets back what it did not move, and a
// read reserves one chunk before it goes and is given back what it did not move, or
// charged late what it moved beyond. The debt of threads that ended stays the
// service's (orphans), taken when its bucket is due.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "abi/limits_abi.h"
#include "bucket/debt.h"
#include "shm/shm_slots.h"
#include "segment/shm_client.h"
#include "supervisor/sv_syscalls.h"
#include "supervisor/sv_target.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

inline constexpr uint64_t kSweepNs = 500'000'000;  // how often gone threads and processes are dropped
// What a call of unknown size is charged when nothing shows what it moved (its iovec or
// msghdr unreadable: Yama, a non-dumpable program; and its thread's counters unreadable,
// or a receive, which they do not count): the most one call moves (Linux's MAX_RW_COUNT).
inline constexpr uint64_t kSvUnknownMax = 0x7ffff000;

// A call made and not yet charged: charged at the thread's next notification.
struct Owed {
  bool active = false;
  SvMoved moved = SvMoved::Unit;
  CallId call = CallId::count_;
  uint8_t bucket[2] = {kNoBucket, kNoBucket};
  uint64_t asked = 0;    // an upper bound of what it can move (UINT64_MAX: unknown)
  uint64_t prepaid = 0;  // units taken before it went (a write's size, a read's reservation)
  uint64_t view_seq = 0;
  uint64_t counted = 0;  // bytes counted in the stats before it went (a write's size)
};

struct Proc {
  int pid = 0;
  uint64_t start_time = 0;
  ShmSlot* slot = nullptr;
  int pidfd = -1;
  BucketState own[kMaxRules]{};  // scope process
};

// Where a thread's last piece of debt put it in a bucket's queue: its call goes when that
// place is due, whatever other threads took after it (a place in the queue, as the
// library's sleepers have).
struct Place {
  uint8_t bucket = kNoBucket;
  uint64_t tat = 0;  // the bucket's clock right after the piece was taken
};

struct Thread {
  int tid = 0, tgid = 0;
  int io_fd = -1;
  // Its I/O counters cannot be read (non-dumpable, another user's, the supervisor out of
  // descriptors): its calls are charged by what they ask, an unknown size as the most a
  // call can move (kSvUnknownMax), and never given back.
  bool blind = false;
  SvIo io{};      // its I/O counters when its last settled call went (the baseline)
  bool io_now = false;  // `io` was read during the notification being handled
  Owed owed{};
  DebtList debt;
  Place place[DebtList::kSlots]{};  // of the call being handled (cleared at each notification)
  // Protected reads of its made in a row whose answer came too late (a signal interrupted
  // the call meanwhile; it restarts): from kSvTimedLostMax on, the next goes with
  // CONTINUE, untimed, which the kernel makes without interruption (sv_protect.h).
  uint8_t timed_lost = 0;
};

// Debt a thread left when it ended (a write's prepaid size not taken yet, a read's late
// charge): still the service's, taken when its bucket is due (never dropped with the thread).
struct Orphan {
  int tgid = 0;
  Debt debt{};
};

class SvLedger {
 public:
  SvLedger(Segment& seg, SvLimits& lim, bool strict) : seg_(seg), lim_(lim), strict_(strict) {}
  // The thread or process, seen before or now (nullptr: gone, or not ours).
  Thread* thread_get(int tid);
  Proc* proc_get(int tgid);
  // Only those seen before.
  Thread* thread_find(int tid);
  Proc* proc_find(int tgid);
  // Drops the processes and threads that ended (a thread's debt becomes an orphan).
  void sweep();
  // The end: every process's slot released, its pidfd closed.
  void drop_all();
  // The segment is lost: no slot to count in any more.
  void lose_slots();
  // New limits: debts, calls not settled and per-process buckets follow their rules.
  void follow(const LimitsView& prev, const uint8_t to[kMaxRules], uint64_t seq, uint64_t now);

  // The bucket state a call of `p` is charged to (the service's, or the process's own).
  BucketState& state(Proc& p, uint8_t bucket);
  // `late`: the units have moved already (a read settled after it): the library's
  // sleepers in the same service bucket then wait them off too (bucket_take_late).
  void charge(Thread& th, uint8_t bucket, uint64_t moved, bool late = false);
  void give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now);
  // Takes pieces of what the thread owes. `wait` (a call held until its debt is paid): a
  // piece only when its bucket lets a call go now, so that however many threads owe, the
  // bucket's clock stays within its depth and a piece of now (never beyond max_ahead_ns,
  // where bucket_take reads it as garbage and forgets it: 200 threads were 1.25x over);
  // else (a call that goes anyway) while the clock stays within half of max_ahead_ns,
  // the rest left owed.
  void pay(Thread& th, Proc& p, uint64_t now, bool wait);
  // When the call charged to `bucket` may go (0: now): its buckets' debt paid down to the
  // depth, and nothing this thread owes them left untaken. Takes further pieces while the
  // buckets allow them.
  uint64_t hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now);
  // The debt of ended threads, taken when due (at most once per its wake time).
  void pay_orphans_due(uint64_t now);
  // When the orphans' debt is due next (0: none left).
  uint64_t orphan_wake() const { return orphans_.empty() ? 0 : orphan_wake_; }
  void count(Proc& p, CallId call, uint64_t calls, uint64_t bytes);
  // Settles the thread's last call by its counters (`have_io`: read now, `io`).
  void settle(Thread& th, Proc& p, bool have_io, const SvIo& io);
  // Settles the call `o` that moved `moved` bytes (counted, reservation given back or charged late).
  void settle_moved(Thread& th, Proc& p, const Owed& o, uint64_t moved);
  // Reads the thread's I/O counters as the baseline of a call about to be settled after
  // it (once per notification: a call the supervisor makes or charges by its size
  // needs none).
  void io_baseline(Thread& th);
  // Says once that a thread's counters or memory cannot be read, and what it is charged.
  void say_blind(const Thread& th, const char* what);
  // The service's segment (its counters, histograms) and name.
  ShmSegment& shm() { return seg_.seg(); }
  const std::string& service() const { return seg_.service(); }

 private:
  uint64_t eligible_at(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now);
  // Takes the next piece of a sharing rule's debt (bucket/share.h). @return false if the
  // rule does not share (the caller takes it from the rate alone).
  bool share_pay(Proc& p, Debt& d, uint64_t now);
  uint64_t pay_orphans(uint64_t now);
  void orphan_debt(Thread& th);
  void proc_drop(Proc& p);

  Segment& seg_;
  SvLimits& lim_;
  bool strict_ = false;  // a --strict tree: slots shared with the library, not marked supervised
  std::unordered_map<int, Thread> threads_;
  std::unordered_map<int, Proc> procs_;
  std::vector<Orphan> orphans_;
  uint64_t orphan_wake_ = 0;  // when orphans_ is due next (0: none looked at yet)
  bool said_blind_ = false;
};

}  // namespace bonsai::ctl
