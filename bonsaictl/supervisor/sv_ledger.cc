// SPDX-License-Identifier: MIT
// The supervisor's ledger (sv_ledger.h): the processes and threads seen, and charging
// their calls.
#include "supervisor/sv_ledger.h"

#include <fmt/core.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bucket/limits_carry.h"
#include "bucket/pace_step.h"
#include "shm/shm_host.h"
#include "shm/shm_proc.h"
#include "supervisor/sv_emulate.h"
#include "supervisor/sv_say.h"
#include "sys/clock.h"
#include "sys/lane_add.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace bonsai::ctl {

BucketState& SvLedger::state(Proc& p, uint8_t bucket) {
  ShmSegment& s = seg_.seg();
  if (s.header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
    return s.buckets[bucket];
  return p.own[bucket];
}

void SvLedger::charge(Thread& th, uint8_t bucket, uint64_t moved, bool late) {
  const BucketParams* bp = lim_.params(bucket);
  if (!bp) return;
  th.debt.add(bucket, call_units(*bp, static_cast<int64_t>(std::min<uint64_t>(moved, INT64_MAX))), late);
}

void SvLedger::give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now) {
  const BucketParams* bp = lim_.params(bucket);
  if (!bp) return;
  units = th.debt.forget(bucket, units);  // not taken yet: forgotten first
  if (units) bucket_give_back(state(p, bucket), *bp, units, now);
}

namespace {

// Whether a piece may be taken from `s` now (see SvLedger::pay).
bool piece_room(const BucketState& s, const BucketParams& p, uint64_t now, bool wait) {
  if (wait) return pace_queue_when(s, p, now, kDefaultSlackNs) == 0;
  uint64_t tat = s.tat_ns.load(std::memory_order_relaxed);
  return tat <= now || tat - now <= p.max_ahead_ns / 2;
}

}  // namespace

void SvLedger::pay(Thread& th, Proc& p, uint64_t now, bool wait) {
  for (Debt& d : th.debt.slot) {
    if (!d.units) continue;
    const BucketParams* bp = lim_.params(d.bucket);
    if (!bp) {
      d = Debt{};
      continue;
    }
    if (share_pay(p, d, now)) continue;  // shares wait in their own steps (share_at)
    BucketState& s = state(p, d.bucket);
    if (!piece_room(s, *bp, now, wait)) continue;
    uint8_t b = d.bucket;
    debt_take_piece(d, s, *bp, now);
    Place* at = nullptr;
    for (Place& pl : th.place)
      if (pl.bucket == b || (!at && pl.bucket == kNoBucket)) at = &pl;
    if (at) *at = Place{b, s.tat_ns.load(std::memory_order_relaxed)};
  }
}

void SvLedger::pay_orphans_due(uint64_t now) {
  if (!orphans_.empty() && now >= orphan_wake_) orphan_wake_ = pay_orphans(now);
}

void SvLedger::orphan_debt(Thread& th) {
  for (Debt& d : th.debt.slot)
    if (d.units && lim_.params(d.bucket)) orphans_.push_back(Orphan{th.tgid, d});
  th.debt.clear();
}

uint64_t SvLedger::pay_orphans(uint64_t now) {
  uint64_t wake = 0;
  bool service = seg_.seg().header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service);
  for (size_t i = 0; i < orphans_.size();) {
    Debt& d = orphans_[i].debt;
    const BucketParams* bp = lim_.params(d.bucket);
    auto pit = procs_.find(orphans_[i].tgid);
    // A process's own buckets end with it; a service's outlive its threads. Under a
    // sharing rule an orphan is taken at its rate (its borrowing ended with its thread).
    BucketState* s = !bp ? nullptr : service ? &seg_.seg().buckets[d.bucket] : pit != procs_.end() ? &pit->second.own[d.bucket] : nullptr;
    if (s) {
      for (int round = 0; round < 64 && d.units && piece_room(*s, *bp, now, true); ++round)
        debt_take_piece(d, *s, *bp, now);
      if (d.units) {
        uint64_t due = pace_queue_when(*s, *bp, now, kDefaultSlackNs);
        if (!due) due = now + 1'000'000;
        if (!wake || due < wake) wake = due;
        ++i;
        continue;
      }
    }
    orphans_[i] = orphans_.back();
    orphans_.pop_back();
  }
  return wake;
}

// When the call may go: its buckets' debt paid down to the depth, and nothing this
// thread owes them left untaken. Takes further pieces while the buckets allow them.
uint64_t SvLedger::hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now) {
  for (int round = 0; round < 64; ++round) {
    pay(th, p, now, true);
    uint64_t at = eligible_at(th, p, bucket, now);
    if (at) return at;
    if (!th.debt.owes(bucket[0]) && !th.debt.owes(bucket[1])) return 0;
  }
  return now + 1'000'000;  // a huge debt on an idle bucket: look again in 1 ms
}

uint64_t SvLedger::eligible_at(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now) {
  uint64_t at = 0;
  for (int i = 0; i < 2; ++i) {
    const BucketParams* bp = lim_.params(bucket[i]);
    if (!bp) continue;
    if (lim_.view().host1[bucket[i]]) {  // shares: a borrower's rate may be in debt; its steps say when
      for (const Debt& d : th.debt.slot)
        if (d.bucket == bucket[i] && d.share_at > now) at = std::max(at, d.share_at);
      continue;
    }
    // Owing: its next piece waits for the bucket's queue. Paid: its place in the queue is
    // due (later takers do not hold it back), as a library sleeper's. Charged nothing: the
    // bucket's queue. The library's pacing answers (bucket/pace_step.h).
    const Place* pl = nullptr;
    for (const Place& x : th.place)
      if (x.bucket == bucket[i]) pl = &x;
    if (pl && !th.debt.owes(bucket[i]))
      at = std::max(at, pace_when(*bp, pl->tat, now, kDefaultSlackNs));
    else
      at = std::max(at, pace_queue_when(state(p, bucket[i]), *bp, now, kDefaultSlackNs));
  }
  return at;
}

void SvLedger::count(Proc& p, CallId call, uint64_t calls, uint64_t bytes) {
  if (!p.slot || call == CallId::count_) return;
  CallLane& cl = p.slot->counters.lanes[0].by_call[static_cast<size_t>(call)];  // the supervisor's lane
  if (calls) lane_add(cl.calls, calls);
  if (bytes) lane_add(cl.bytes, bytes);
}

void SvLedger::io_baseline(Thread& th) {
  if (th.io_now || th.io_fd < 0) return;
  SvIo io;
  if (sv_io_read(th.io_fd, io)) th.io = io;
  else if (!th.blind) th.blind = true, say_blind(th, "the I/O counters");
  th.io_now = true;
}

void SvLedger::settle(Thread& th, Proc& p, bool have_io, const SvIo& io) {
  Owed& o = th.owed;
  if (!o.active) return;
  o.active = false;
  // No counters: the size asked; unknown too, the most a call moves (never nothing).
  uint64_t moved = o.asked == UINT64_MAX ? kSvUnknownMax : o.asked;
  if (have_io) {
    if (o.moved == SvMoved::ReadChar) moved = io.rchar >= th.io.rchar ? io.rchar - th.io.rchar : 0;
    else moved = io.wchar >= th.io.wchar ? io.wchar - th.io.wchar : 0;
    moved = std::min(moved, o.asked);
  }
  settle_moved(th, p, o, moved);
}

void SvLedger::settle_moved(Thread& th, Proc& p, const Owed& o, uint64_t moved) {
  if (moved >= o.counted) count(p, o.call, 0, moved - o.counted);
  else count(p, o.call, 0, static_cast<uint64_t>(-static_cast<int64_t>(o.counted - moved)));  // sums are mod 2^64
  if (o.view_seq != lim_.view().seq) return;  // unusable limits came meanwhile: not charged
  uint64_t now = mono_ns();
  for (uint8_t b : o.bucket) {
    const BucketParams* bp = lim_.params(b);
    if (!bp) continue;
    if (bp->per_call) {  // one call: a prepaid write paid it when it went
      if (!o.prepaid && (o.moved == SvMoved::ReadChar || o.moved == SvMoved::WriteChar)) charge(th, b, 1, true);
    } else {
      SvSettle s = sv_settle(o.prepaid, moved);
      if (s.charge_late) charge(th, b, s.charge_late, true);
      if (s.give_back) give_back(th, p, b, s.give_back, now);
    }
  }
}

bool SvLedger::share_pay(Proc& p, Debt& d, uint64_t now) {
  uint8_t b = d.bucket;
  ShmHost* h = shm_host();
  if (b >= kMaxRules || !lim_.view().host1[b] || !h) return false;
  uint64_t units = 0;
  if (debt_share_piece(d, state(p, b), h->buckets[lim_.view().host1[b] - 1], lim_.view().share[b], now, kDefaultSlackNs,
                       &units) == ShareWay::Borrow)
    lim_.share_borrowed(b, units);
  return true;
}

Thread* SvLedger::thread_find(int tid) {
  auto it = threads_.find(tid);
  return it == threads_.end() ? nullptr : &it->second;
}

Proc* SvLedger::proc_find(int tgid) {
  auto it = procs_.find(tgid);
  return it == procs_.end() ? nullptr : &it->second;
}

void SvLedger::drop_all() {
  for (auto& [pid, p] : procs_) proc_drop(p);
}

void SvLedger::lose_slots() {
  for (auto& [pid, p] : procs_) p.slot = nullptr;
}

void SvLedger::follow(const LimitsView& prev, const uint8_t to[kMaxRules], uint64_t seq, uint64_t now) {
  auto renumber = [&](uint8_t b) { return b < kMaxRules ? to[b] : kNoBucket; };
  for (auto& [tid, th] : threads_) {
    // A call made under the old view and not settled yet (a read's bytes show at the
    // thread's next call) is charged to the buckets that continue its rules.
    for (uint8_t& b : th.owed.bucket) b = renumber(b);
    th.owed.view_seq = seq;
    for (Debt& d : th.debt.slot)
      if (d.units && (d.bucket = renumber(d.bucket)) == kNoBucket) d = Debt{};
  }
  for (auto it = orphans_.begin(); it != orphans_.end();)
    it = (it->debt.bucket = renumber(it->debt.bucket)) == kNoBucket ? orphans_.erase(it) : std::next(it);
  orphan_wake_ = 0;
  for (auto& [pid, p] : procs_) {
    buckets_carry(prev, p.own, lim_.view().lim, p.own, now);
    if (p.slot) p.slot->seen_seq.store(seq, std::memory_order_release);
  }
}

void SvLedger::say_blind(const Thread& th, const char* what) {
  if (said_blind_) return;
  said_blind_ = true;
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  sv_say(fmt::format("bonsaictl supervisor ({}): cannot read {} of thread {} (process {}: non-dumpable, "
                     "Yama ptrace_scope, another user's, or out of descriptors: {} open allowed): its calls are "
                     "charged by the sizes they ask, a size it cannot read as {} bytes, and nothing is given back "
                     "(docs/reference/supervised.md \"Threads the supervisor cannot see\")\n",
                     seg_.service(), what, th.tid, th.tgid, static_cast<uint64_t>(r.rlim_cur), kSvUnknownMax));
}

Proc* SvLedger::proc_get(int tgid) {
  auto it = procs_.find(tgid);
  if (it != procs_.end()) return &it->second;
  uint64_t start = 0;
  char comm[16] = {};
  {
    SvSpareFd room;  // out of descriptors, still told apart from a process that ended
    if (proc_status(tgid, start) != ProcStatus::Alive) return nullptr;
    proc_comm(tgid, comm, sizeof comm);
  }
  Proc& p = procs_[tgid];
  p.pid = tgid;
  p.start_time = start;
  // No pidfd (out of descriptors): no call made on its behalf, its receives charged as asked.
  p.slot = lim_.lost() ? nullptr : slot_claim(seg_.seg(), tgid, start, comm, lim_.view().seq, unix_now_ns());
  if (p.slot && !strict_) p.slot->flags.store(kSlotSupervised, std::memory_order_release);
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0));
  return &p;
}

Thread* SvLedger::thread_get(int tid) {
  auto it = threads_.find(tid);
  if (it != threads_.end()) return &it->second;
  int tgid = sv_tgid_of(tid);
  if (tgid < 0) return nullptr;
  Thread& th = threads_[tid];
  th.tid = tid;
  th.tgid = tgid;
  th.io_fd = sv_io_open(tgid, tid);
  th.blind = th.io_fd < 0 || !sv_io_read(th.io_fd, th.io);
  if (th.blind) say_blind(th, th.io_fd < 0 && (errno == EMFILE || errno == ENFILE) ? "the I/O counters (out of descriptors)" : "the I/O counters");
  return &th;
}

void SvLedger::proc_drop(Proc& p) {
  // Under --strict the process's library holds the same slot and releases it at exit;
  // by the time the process is seen gone the slot may be another process's: released
  // here only while it is still this process's (a library that died without releasing).
  if (p.slot && p.slot->pid.load(std::memory_order_acquire) == p.pid &&
      p.slot->start_time.load(std::memory_order_relaxed) == p.start_time)
    slot_release(seg_.seg(), *p.slot);
  if (p.pidfd >= 0) ::close(p.pidfd);
  p.slot = nullptr;
  p.pidfd = -1;
}

void SvLedger::sweep() {
  SvSpareFd room;  // out of descriptors, a process is not taken for ended
  for (auto it = procs_.begin(); it != procs_.end();) {
    Proc& p = it->second;
    if (!proc_is(p.pid, p.start_time)) {
      proc_drop(p);
      it = procs_.erase(it);
      continue;
    }
    if (p.slot) {  // the name of the program it runs now (exec)
      char comm[16] = {};
      proc_comm(p.pid, comm, sizeof comm);
      if (comm[0]) std::memcpy(p.slot->comm, comm, sizeof comm);
    }
    ++it;
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    // Whether it lives is asked of the kernel, not of its /proc files: a thread the
    // supervisor cannot see (non-dumpable, out of descriptors) is kept with its debt.
    bool gone = !procs_.count(it->second.tgid) || !sv_thread_alive(it->second.tgid, it->second.tid);
    if (gone) {
      if (it->second.io_fd >= 0) ::close(it->second.io_fd);
      orphan_debt(it->second);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace bonsai::ctl
