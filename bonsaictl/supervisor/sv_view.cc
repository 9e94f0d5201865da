// SPDX-License-Identifier: MIT
// The supervisor's view of the service: the limits in force (read from the segment and
// built as the library builds them, bucket/limits_view.h), and the processes and threads
// it has seen (their slots, pidfds and I/O counters), dropped when they end.
#include <fmt/core.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_guard.h"
#include "shm/shm_proc.h"
#include "bucket/fleet_lease.h"
#include "bucket/limits_carry.h"
#include "supervisor/sv_loop.h"
#include "supervisor/sv_say.h"
#include "sys/clock.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace bonsai::ctl {

void Loop::view_refresh() {
  ShmSegment& s = seg_.seg();
  if (!lost_ && shm_guard_lost(&s)) {
    // As the library does: the limits in force stay, with this supervisor's own
    // buckets (the zeroed mapping reads as scope `process`); counts go nowhere.
    lost_ = true;
    sv_say(fmt::format("bonsaictl supervisor ({}): the service's segment was truncated or damaged: keeping the "
               "limits in force with the supervisor's own buckets; restart the service to rejoin it\n",
               seg_.service()));
    for (auto& [pid, p] : procs_) p.slot = nullptr;
  }
  if (lost_) return;
  shares_refresh();  // a capacity changed by `load` (cheap when nothing shares)
  uint64_t seq_now = s.limits.seq.load(std::memory_order_acquire);
  if (view_.seq == seq_now && view_.seq) return fleet_lapse_check();
  // protect: (issue 52): the reads this supervisor times, read again at each limits change (untrusted: masked).
  protect_calls_ = s.protect.calls.load(std::memory_order_relaxed) & kSvTimedCalls;
  LimitSet set{};
  uint64_t seq = 0;
  if (!seqlock_read(s.limits, set, seq, 100)) return;  // a writer is busy: next time
  // Truncated while we read: the guard's zeroes read as "no limits" with seq 0 (a
  // live segment's seq starts at 2). Never install them; the next refresh sees lost.
  if (seq == 0 || shm_guard_lost(&s)) return;
  fleet_fallback_ = false;  // the agent wrote new limits (a renewal): they are in force
  install(set, seq, true);
  fleet_lapse_check();
}

// Fleet caps (docs/fleet.md): the limits are this host's grant, good until the lease
// runs out. As the library does (runtime/fleet_lapse.h, bucket/fleet_lease.h): once it
// has, the fallback rates (the cap / live hosts) are in force until the agent writes
// limits again -- never the last grant, never unlimited.
void Loop::fleet_lapse_check() {
  if (fleet_fallback_ || !view_.usable || lost_) return;
  ShmFleet& f = seg_.seg().fleet;
  uint64_t exp = f.lease_expiry_ns.load(std::memory_order_acquire);
  if (!exp || mono_ns() < exp) return;
  LimitSet fallback{};
  fleet_fallback_set(view_.lim.set, f.cap, f.fallback, fallback);
  fleet_fallback_ = true;
  f.lib_fallbacks.fetch_add(1, std::memory_order_relaxed);
  if (!said_fallback_)
    sv_say(fmt::format("bonsaictl supervisor ({}): fleet lease ran out (the fleet agent or its store is away): "
                       "running at the fallback rate (the fleet cap / live hosts) until it is renewed\n",
                       seg_.service()));
  said_fallback_ = true;
  install(fallback, view_.seq, false);
}

void Loop::install(const LimitSet& set, uint64_t seq, bool from_segment) {
  SvView v;
  v.seq = seq;
  const char* problem = limits_problem(set);
  if (!problem && !limits_view_build(set, v.lim)) problem = "two rules share a call";
  if (problem) {  // as the library: the limits in force stay (none at first)
    if (view_.seq != seq)
      sv_say(fmt::format("bonsaictl supervisor ({}): the service's limits changed but are unusable ({}); keeping "
                 "the old ones\n", seg_.service(), problem));
    view_.seq = seq;
    return;
  }
  v.usable = true;
  if (view_.seq && from_segment) say_unseen(v.lim.set);
  // The buckets keep their state across the change (bucket/limits_carry.h), as in the
  // library: this supervisor's per-process buckets are carried over (the service's
  // shared ones are carried by bonsaictl when it writes the limits), what threads owe
  // follows its rule, held calls are re-timed at the new rates (a removed rule lets
  // them go), calls not settled yet are charged to the rules that continue theirs.
  LimitsView none{};
  const LimitsView& prev = view_.usable ? view_.lim : none;
  uint8_t from[kMaxRules];
  limits_match(prev.set, v.lim.set, from);
  uint8_t to[kMaxRules];  // old bucket -> new bucket
  for (auto& b : to) b = kNoBucket;
  for (uint32_t i = 0; i < v.lim.set.count; ++i)
    if (from[i] != kNoBucket) to[from[i]] = static_cast<uint8_t>(i);
  auto renumber = [&](uint8_t b) { return b < kMaxRules ? to[b] : kNoBucket; };
  uint64_t now = mono_ns();
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
    buckets_carry(prev, p.own, v.lim, p.own, now);
    if (p.slot) p.slot->seen_seq.store(seq, std::memory_order_release);
  }
  view_ = v;
  shares_refresh();
  for (Held& h : held_) {
    for (uint8_t& b : h.bucket) b = renumber(b);
    if (h.paced) {  // its place was taken in the old clock: kept (a removed rule lets it go)
      if (h.bucket[0] == kNoBucket && h.bucket[1] == kNoBucket) h.deadline = now;
      continue;
    }
    if (!h.deadline) continue;  // a receive waiting for data: charged when it comes
    auto pit = procs_.find(h.tgid);
    auto tit = threads_.find(h.tid);
    h.deadline = pit == procs_.end() || tit == threads_.end() ? now : hold_until(tit->second, pit->second, h.bucket, now);
    if (!h.deadline) h.deadline = now;  // goes at the loop's next pass
  }
}

// New limits on system calls the filter does not notify cannot reach this tree: say so.
void Loop::say_unseen(const LimitSet& set) {
  std::string missing;
  for (int nr : sv_notified_syscalls(set))
    if (std::find(notified_.begin(), notified_.end(), nr) == notified_.end())
      if (const SvSyscall* sc = sv_syscall(nr)) missing += (missing.empty() ? "" : ", ") + std::string(sc->name);
  if (!missing.empty())
    sv_say(fmt::format("bonsaictl supervisor ({}): the new limits name system calls this supervised program was "
               "not started with ({}): they apply to it only after a restart\n", seg_.service(), missing));
}

void Loop::say_blind(const Thread& th, const char* what) {
  if (said_blind_) return;
  said_blind_ = true;
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  sv_say(fmt::format("bonsaictl supervisor ({}): cannot read {} of thread {} (process {}: non-dumpable, "
                     "Yama ptrace_scope, another user's, or out of descriptors: {} open allowed): its calls are "
                     "charged by the sizes they ask, a size it cannot read as {} bytes, and nothing is given back "
                     "(docs/limits.md \"Threads the supervisor cannot see\")\n",
                     seg_.service(), what, th.tid, th.tgid, static_cast<uint64_t>(r.rlim_cur), kSvUnknownMax));
}

Proc* Loop::proc_get(int tgid) {
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
  p.slot = lost_ ? nullptr : slot_claim(seg_.seg(), tgid, start, comm, view_.seq, unix_now_ns());
  if (p.slot && !strict_) p.slot->flags.store(kSlotSupervised, std::memory_order_release);
  p.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0));
  return &p;
}

Thread* Loop::thread_get(int tid) {
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

void Loop::proc_drop(Proc& p) {
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

void Loop::sweep(uint64_t now) {
  if (now - last_sweep_ < kSweepNs) return;
  last_sweep_ = now;
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
  // Descriptors unused for a while (light again, closed, or a stream that ended):
  // forgotten, with their credit (at most one turn each).
  for (auto it = descs_.begin(); it != descs_.end();)
    it = now - it->second.last_use > 10 * kPaceLightAfterNs ? descs_.erase(it) : std::next(it);
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
