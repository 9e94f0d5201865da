// SPDX-License-Identifier: MIT
// The supervisor's state and steps (supervisor.h is its entry point). What a call is
// charged and when it may go is the library's arithmetic (bucket/limits_view.h: the view,
// a call's units, when a bucket allows a call; bucket/debt.h: owed units taken in
// pieces); what is the supervisor's own is here: notifications (sv_loop.cc), what a
// call moved, learnt after it (sv_charge.cc), the held-call queue (sv_held.cc), the
// view and the traced processes and threads (sv_view.cc), zero-copy calls made on a
// thread's behalf (sv_emulate.h, Loop::emulate in sv_held.cc), writes on descriptors
// that must not wait taking turns in their buckets' queues (sv_turn.h, sv_pace.cc).
#pragma once
#include <poll.h>
#include <seccomp.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "abi/limits_abi.h"
#include "bucket/debt.h"
#include "bucket/limits_view.h"
#include "bucket/share.h"
#include "shm/shm_slots.h"
#include "segment/shm_client.h"
#include "supervisor/supervisor.h"
#include "supervisor/sv_emulate.h"
#include "supervisor/sv_protect.h"
#include "supervisor/sv_turn.h"
#include "supervisor/sv_syscalls.h"
#include "supervisor/sv_target.h"

namespace bonsai::ctl {

inline constexpr uint64_t kSweepNs = 500'000'000;  // how often gone threads and processes are dropped
inline constexpr int kValidCheckMs = 100;          // how often held receives check they are still wanted
// What a call of unknown size is charged when nothing shows what it moved (its iovec or
// msghdr unreadable: Yama, a non-dumpable program; and its thread's counters unreadable,
// or a receive, which they do not count): the most one call moves (Linux's MAX_RW_COUNT).
inline constexpr uint64_t kSvUnknownMax = 0x7ffff000;

// The limits in force: the library's view, with the segment's sequence it came from.
struct SvView {
  LimitsView lim{};
  uint64_t seq = 0;
  bool usable = false;
  // Shares: per rule with a ceiling and a usable host capacity rule, its parameters
  // (host1 = 0: held to its rate), as of the host's capacity sequence `host_seq`.
  ShareParams share[kMaxRules]{};
  uint8_t host1[kMaxRules]{};
  uint64_t host_seq = 0;
  // The bucket's parameters if `bucket` is one of the view's, else nullptr.
  const BucketParams* params(uint8_t bucket) const {
    return usable && bucket < lim.set.count ? &lim.params[bucket] : nullptr;
  }
};

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

// A descriptor that paced calls are made on (sv_turn.h, sv_pace.cc).
struct SvDesc {
  uint64_t last_place = 0;  // when it last took a place in a queue (0: never): light after a while
  uint64_t last_use = 0;
  uint64_t credit = 0;      // units of `bucket` its last place held beyond its call
  uint8_t bucket = kNoBucket;
  uint64_t seq = 0;         // the view `bucket` is of
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

// A call held back: until `deadline` (its buckets' debt is paid), or, a receive that
// would block, until its socket has data (`wait_fd`, a copy of it).
struct Held {
  uint64_t id;
  int tid, tgid;
  CallId call;
  uint64_t deadline;  // 0: none
  uint64_t since;
  int wait_fd = -1;
  uint64_t asked = 0;
  uint8_t bucket[2] = {kNoBucket, kNoBucket};
  // A zero-copy call the supervisor makes itself when released (emu.nr >= 0), cut to
  // the `reserved` bytes it took from each byte bucket before it was held.
  SvEmu emu{};
  uint64_t reserved[2] = {0, 0};
  // A call on a descriptor that must not wait (sv_turn.h, sv_pace.cc): its place in the queue is
  // taken; it goes at `deadline`, owing nothing more.
  bool paced = false;
  int lfd = -1;  // the listener it came from (set by Loop::hold)
  // A protected read the supervisor makes and times itself when released (timed.nr >= 0,
  // sv_protect.h): charged `timed_reserve` before it went, as of view `timed_seq`.
  SvTimedArgs timed{};
  uint64_t timed_reserve = 0;
  uint64_t timed_seq = 0;
};

// A tree's listener (the one the supervisor was started for, and those of programs that
// joined it: abi/sv_join.h), with the stderr of the program that handed it over: the
// supervisor's messages go to the newest tree's stderr, and it holds none of an ended one.
struct Listener {
  int fd = -1;
  int err_fd = -1;
};

// A program joining (sv_serve.cc): its filter sent, its listener awaited.
struct Joiner {
  int fd = -1;
  uint64_t since = 0;
};

class Loop {
 public:
  Loop(int fd, Segment& seg, std::vector<int> notified, bool strict, SvServe serve = {})
      : fd_(fd), seg_(seg), notified_(std::move(notified)), strict_(strict), serve_(serve) {}
  SupervisorStats run();

 private:
  // sv_loop.cc: one notification
  void handle(const seccomp_notif& req);
  void respond(uint64_t id);
  // Answers with a result instead of CONTINUE (`r`: bytes, or -errno).
  void respond_value(uint64_t id, int64_t r);
  uint64_t asked_bytes(const SvSyscall& sc, const seccomp_notif& req);
  // sv_view.cc: the limits in force, processes and threads
  void view_refresh();
  // Installs `set` (the segment's limits of sequence `seq`, or, `from_segment` false,
  // the fleet fallback made of them): the buckets, debts and held calls follow.
  void install(const LimitSet& set, uint64_t seq, bool from_segment);
  void fleet_lapse_check();
  bool fleet_fallback_ = false;  // the fleet fallback is in force (until the segment's limits change)
  bool said_fallback_ = false;
  void say_unseen(const LimitSet& set);
  // Says once that a thread's counters or memory cannot be read, and what it is charged.
  void say_blind(const Thread& th, const char* what);
  bool said_blind_ = false;
  bool said_unseen_ = false;  // a notification of a task it cannot see (pid 0): refused
  Thread* thread_get(int tid);
  Proc* proc_get(int tgid);
  void sweep(uint64_t now);
  void proc_drop(Proc& p);
  // sv_charge.cc: charging
  void settle(Thread& th, Proc& p, bool have_io, const SvIo& io);
  // Settles the call `o` that moved `moved` bytes (counted, reservation given back or charged late).
  void settle_moved(Thread& th, Proc& p, const Owed& o, uint64_t moved);
  // Reads the thread's I/O counters as the baseline of a call about to be settled after
  // it (once per notification: a call the supervisor makes or charges by its size
  // needs none).
  void io_baseline(Thread& th);
  // `late`: the units have moved already (a read settled after it): the library's
  // sleepers in the same service bucket then wait them off too (bucket_take_late).
  void charge(Thread& th, uint8_t bucket, uint64_t moved, bool late = false);
  void give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now);
  // Takes pieces of what the thread owes. `wait` (a call held until its debt is paid): a
  // piece only when its bucket lets a call go now, so that however many threads owe, the
  // bucket's clock stays within its depth and a piece of now (never beyond max_ahead_ns,
  // where bucket_take and bucket_due read it as garbage and forget it: issue 49, 200
  // threads were 1.25x over); else (a call that goes anyway) while the clock stays within
  // half of max_ahead_ns, the rest left owed.
  void pay(Thread& th, Proc& p, uint64_t now, bool wait);
  // The debt of ended threads (orphans_): taken when due. @return when to look again (0: none left).
  uint64_t pay_orphans(uint64_t now);
  void orphan_debt(Thread& th);
  uint64_t hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now);
  uint64_t eligible_at(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now);
  // Shares: the rules' share parameters from the host segment (again when its capacity changed).
  void shares_refresh();
  // Takes the next piece of a sharing rule's debt (bucket/share.h). @return false if the
  // rule does not share (the caller takes it from the rate alone).
  bool share_pay(Thread& th, Proc& p, Debt& d, uint64_t now);
  // A paced write's (sv_pace.cc) sharing rule: its host bucket and parameters for
  // pace_take (none: held to its rate); and units the host lent it, counted.
  PaceShare share_host(uint8_t bucket);
  void share_borrowed(uint8_t bucket, uint64_t units);
  void count(Proc& p, CallId call, uint64_t calls, uint64_t bytes);
  BucketState& state(Proc& p, uint8_t bucket);
  // sv_pace.cc: a write on a descriptor that must not wait takes a place in its
  // buckets' queues and is held until it is due (answered, made or held: true).
  bool pace(const SvSyscall& sc, const seccomp_notif& req, Thread& th, Proc& p, Held& h, uint64_t asked,
            uint64_t now);
  // sv_held.cc: calls held back
  void hold(Held h, Proc& p);
  void release(Held& h, Proc* p, uint64_t now);
  void release_due(uint64_t now);
  // Makes an emulated call (h.emu) and answers it with its result; gives back to the
  // buckets what it reserved and did not move. A notification no longer valid
  // (the thread was interrupted or killed) is not made, and its reservation given back.
  void emulate(Held& h, uint64_t now);
  // How long the loop may sleep (ns), and the held receives' sockets to poll.
  uint64_t held_timeout(uint64_t now, std::vector<pollfd>& fds) const;
  // sv_timed.cc: protected reads made and timed here (sv_protect.h)
  // Hands the read `h` to a worker, or, when it cannot be made, lets it go (CONTINUE) and
  // settles it as any read. `th`, `p`: its thread and process.
  void timed_go(Held& h, Thread& th, Proc& p);
  // The reads the workers made: timed, charged, answered; those not made go with CONTINUE.
  void timed_finish();
  // Times, charges and answers a read made (by a worker or here), or lets it go if not made; closes its copy.
  void timed_complete(SvTimedRead& t);
  // A read not made by a worker goes as the kernel's, settled at the thread's next call.
  void timed_continue(Thread& th, CallId call, const uint8_t bucket[2], uint64_t asked, uint64_t reserve,
                      uint64_t seq, uint64_t id);
  bool said_untimed_ = false;
  CallMask protect_calls_ = 0;  // the segment's protect calls the supervisor times (kSvTimedCalls)
  SvTimedPool timed_;
  SvTimedScratch timed_scratch_;  // the loop's own reads (from the page cache)
  // sv_serve.cc: trees that join this supervisor (abi/sv_join.h)
  void join_accept();
  void join_receive(Joiner& j);
  // The filter for joining programs, for the limits in force (built once per sequence). @return false: none.
  bool join_filter();
  void listener_add(int fd, int err_fd);
  void listener_drop(size_t i);
  void stderr_follow();

  int fd_;  // the listener of the notification being handled
  Segment& seg_;
  std::vector<int> notified_;  // what the filter notifies (fixed at launch)
  bool strict_ = false;        // a --strict tree (supervise())
  SvServe serve_;
  std::vector<Listener> listeners_;
  std::vector<Joiner> joiners_;
  uint64_t idle_since_ = 0;    // when the last tree ended (0: one runs)
  std::vector<char> join_bpf_;  // the filter joining programs load (header and instructions)
  uint64_t join_seq_ = 0;
  bool compat_ = false;        // the notification being handled is a 32-bit call (sv_compat.h)
  SvView view_;
  std::unordered_map<int, Thread> threads_;
  std::unordered_map<int, Proc> procs_;
  std::vector<Held> held_;
  std::vector<Orphan> orphans_;
  uint64_t orphan_wake_ = 0;  // when orphans_ is due next (0: empty)
  SupervisorStats stats_;
  uint64_t emu_held_ = 0;
  // The descriptors paced calls were made on, by st_dev and st_ino of the destination
  // (the same socket in every process that shares it).
  std::unordered_map<uint64_t, SvDesc> descs_;  // held calls the supervisor will make itself (Held::emu)
  bool lost_ = false;  // the segment was truncated under us: its mapping is zeroes now
  uint64_t last_sweep_ = 0;
};

}  // namespace bonsai::ctl
