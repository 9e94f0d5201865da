// SPDX-License-Identifier: MIT
// The supervisor's loop (see supervisor.h). One thread, one poll: the listener, the
// sockets of receives waiting for data, and the earliest deadline of a held call.
// The charging steps (settle, charge, pay, hold) share the loop's per-thread and
// per-process state; a thread's debts are their own module (sv_debt.h). Next split
// when it grows: the held-call queue (hold/release/run's first half) into sv_held.cc.
#include "supervisor.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "abi/limit_parse.h"
#include "bucket/token_bucket.h"
#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_guard.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"
#include "sv_debt.h"
#include "sv_syscalls.h"
#include "sv_target.h"
#include "sys/clock.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003eu
#endif

namespace bonsai::ctl {
namespace {

constexpr uint64_t kSlackNs = 2'000'000;      // debt a bucket may carry before a call is held
constexpr uint64_t kSweepNs = 500'000'000;    // how often gone threads and processes are dropped
constexpr int kValidCheckMs = 100;            // how often held receives check they are still wanted

// The limits in force, as the library builds them (runtime/limiter.h LimitsView).
struct View {
  LimitSet set{};
  BucketTable table{};
  BucketParams params[kMaxRules]{};
  uint64_t seq = 0;
  bool usable = false;
};

// A call made and not yet charged: charged at the thread's next notification.
struct Owed {
  bool active = false;
  SvMoved moved = SvMoved::Unit;
  CallId call = CallId::count_;
  uint8_t bucket[2] = {kNoBucket, kNoBucket};
  uint64_t asked = 0;    // an upper bound of what it can move (UINT64_MAX: unknown)
  uint64_t prepaid = 0;  // units taken before it went (writes)
  uint64_t view_seq = 0;
};

struct Proc {
  int pid = 0;
  uint64_t start_time = 0;
  ShmSlot* slot = nullptr;
  int pidfd = -1;
  BucketState own[kMaxRules]{};  // scope process
};

struct Thread {
  int tid = 0, tgid = 0;
  int io_fd = -1;
  SvIo io{};
  Owed owed{};
  DebtList debt;
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
};

class Loop {
 public:
  Loop(int fd, Segment& seg, std::vector<int> notified) : fd_(fd), seg_(seg), notified_(std::move(notified)) {}
  SupervisorStats run();

 private:
  void handle(const seccomp_notif& req);
  void respond(uint64_t id);
  void view_refresh();
  Thread* thread_get(int tid);
  Proc* proc_get(int tgid);
  void settle(Thread& th, Proc& p, bool have_io, const SvIo& io);
  // `late`: the units have moved already (a read settled after it): the library's
  // sleepers in the same service bucket then wait them off too (bucket_take_late).
  void charge(Thread& th, uint8_t bucket, uint64_t moved, bool late = false);
  void give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now);
  void pay(Thread& th, Proc& p, uint64_t now);
  uint64_t hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now);
  void count(Proc& p, CallId call, uint64_t calls, uint64_t bytes);
  uint64_t eligible_at(Proc& p, const uint8_t bucket[2], uint64_t now);
  BucketState& state(Proc& p, uint8_t bucket);
  uint64_t asked_bytes(const SvSyscall& sc, const seccomp_notif& req);
  void hold(Held h, Proc& p);
  void release(Held& h, Proc* p, uint64_t now);
  void sweep(uint64_t now);
  void proc_drop(Proc& p);

  void say_unseen(const LimitSet& set);

  int fd_;
  Segment& seg_;
  std::vector<int> notified_;  // what the filter notifies (fixed at launch)
  View view_;
  std::unordered_map<int, Thread> threads_;
  std::unordered_map<int, Proc> procs_;
  std::vector<Held> held_;
  SupervisorStats stats_;
  bool lost_ = false;  // the segment was truncated under us: its mapping is zeroes now
  uint64_t last_sweep_ = 0;
};

void Loop::view_refresh() {
  ShmSegment& s = seg_.seg();
  if (!lost_ && shm_guard_lost(&s)) {
    // As the library does: the limits in force stay, with this supervisor's own
    // buckets (the zeroed mapping reads as scope `process`); counts go nowhere.
    lost_ = true;
    fmt::print(stderr, "bonsaictl supervisor ({}): the service's segment was truncated or damaged: keeping the "
               "limits in force with the supervisor's own buckets; restart the service to rejoin it\n",
               seg_.service());
    for (auto& [pid, p] : procs_) p.slot = nullptr;
  }
  if (lost_) return;
  uint64_t seq_now = s.limits.seq.load(std::memory_order_acquire);
  if (view_.seq == seq_now && view_.seq) return;
  View v;
  uint64_t seq = 0;
  if (!seqlock_read(s.limits, v.set, seq, 100)) return;  // a writer is busy: next time
  // Truncated while we read: the guard's zeroes read as "no limits" with seq 0 (a
  // live segment's seq starts at 2). Never install them; the next refresh sees lost.
  if (seq == 0 || shm_guard_lost(&s)) return;
  v.seq = seq;
  const char* problem = limits_problem(v.set);
  if (!problem && !bucket_table_build(v.set, v.table, nullptr)) problem = "two rules share a call";
  if (problem) {  // as the library: the limits in force stay (none at first)
    if (view_.seq != seq)
      fmt::print(stderr, "bonsaictl supervisor ({}): the service's limits changed but are unusable ({}); keeping "
                 "the old ones\n", seg_.service(), problem);
    view_.seq = seq;
    return;
  }
  for (uint32_t r = 0; r < v.set.count; ++r) v.params[r] = bucket_params(v.set.rules[r]);
  v.usable = true;
  if (view_.seq) say_unseen(v.set);
  bool changed = view_.seq != 0;
  view_ = v;
  // New rules renumber the buckets: calls owed under the old ones are dropped, this
  // supervisor's per-process buckets start afresh, held calls go (they are charged
  // under the new limits from their next call on), as in the library.
  for (auto& [tid, th] : threads_) {
    th.owed.active = false;
    th.debt.clear();
  }
  for (auto& [pid, p] : procs_) {
    for (auto& b : p.own) bucket_reset_clock(b);
    if (p.slot) p.slot->seen_seq.store(seq, std::memory_order_release);
  }
  if (changed) {
    uint64_t now = mono_ns();
    for (auto& h : held_) release(h, nullptr, now);
    held_.clear();
  }
}

// New limits on system calls the filter does not notify cannot reach this tree: say so.
void Loop::say_unseen(const LimitSet& set) {
  std::string missing;
  for (int nr : sv_notified_syscalls(set))
    if (std::find(notified_.begin(), notified_.end(), nr) == notified_.end())
      if (const SvSyscall* sc = sv_syscall(nr)) missing += (missing.empty() ? "" : ", ") + std::string(sc->name);
  if (!missing.empty())
    fmt::print(stderr, "bonsaictl supervisor ({}): the new limits name system calls this supervised program was "
               "not started with ({}): they apply to it only after a restart\n", seg_.service(), missing);
}

Proc* Loop::proc_get(int tgid) {
  auto it = procs_.find(tgid);
  if (it != procs_.end()) return &it->second;
  uint64_t start = 0;
  if (proc_status(tgid, start) != ProcStatus::Alive) return nullptr;
  Proc& p = procs_[tgid];
  p.pid = tgid;
  p.start_time = start;
  char comm[16] = {};
  proc_comm(tgid, comm, sizeof comm);
  p.slot = lost_ ? nullptr : slot_claim(seg_.seg(), tgid, start, comm, view_.seq, unix_now_ns());
  if (p.slot) p.slot->flags.store(kSlotSupervised, std::memory_order_release);
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
  if (th.io_fd >= 0) sv_io_read(th.io_fd, th.io);
  return &th;
}

BucketState& Loop::state(Proc& p, uint8_t bucket) {
  ShmSegment& s = seg_.seg();
  if (s.header.scope.load(std::memory_order_relaxed) == static_cast<uint32_t>(ShmScope::Service))
    return s.buckets[bucket];
  return p.own[bucket];
}

void Loop::charge(Thread& th, uint8_t bucket, uint64_t moved, bool late) {
  if (bucket == kNoBucket || !view_.usable || bucket >= view_.set.count) return;
  th.debt.add(bucket, view_.params[bucket].per_call ? 1 : moved, late);
}

void Loop::give_back(Thread& th, Proc& p, uint8_t bucket, uint64_t units, uint64_t now) {
  if (bucket == kNoBucket || !view_.usable || bucket >= view_.set.count) return;
  units = th.debt.forget(bucket, units);  // not taken yet: forgotten first
  if (units) bucket_give_back(state(p, bucket), view_.params[bucket], units, now);
}

void Loop::pay(Thread& th, Proc& p, uint64_t now) {
  for (Debt& d : th.debt.slot) {
    if (!d.units) continue;
    if (!view_.usable || d.bucket >= view_.set.count) {
      d = Debt{};
      continue;
    }
    const BucketParams& bp = view_.params[d.bucket];
    BucketState& b = state(p, d.bucket);
    auto piece = DebtList::next_piece(d, static_cast<uint64_t>(bp.batch) * 100);  // ~100 ms of rate
    if (piece.late) bucket_take_late(b, bp, piece.late, now);
    if (piece.fresh) bucket_take(b, bp, piece.fresh, now);
  }
}

// When the call may go: its buckets' debt paid down to the depth, and nothing this
// thread owes them left untaken. Takes further pieces while the buckets allow them.
uint64_t Loop::hold_until(Thread& th, Proc& p, const uint8_t bucket[2], uint64_t now) {
  for (int round = 0; round < 64; ++round) {
    pay(th, p, now);
    uint64_t at = eligible_at(p, bucket, now);
    if (at) return at;
    if (!th.debt.owes(bucket[0]) && !th.debt.owes(bucket[1])) return 0;
  }
  return now + 1'000'000;  // a huge debt on an idle bucket: look again in 1 ms
}

void Loop::count(Proc& p, CallId call, uint64_t calls, uint64_t bytes) {
  if (!p.slot || call == CallId::count_) return;
  CallLane& cl = p.slot->counters.lanes[0].by_call[static_cast<size_t>(call)];  // the supervisor's lane
  if (calls) lane_add(cl.calls, calls);
  if (bytes) lane_add(cl.bytes, bytes);
}

uint64_t Loop::eligible_at(Proc& p, const uint8_t bucket[2], uint64_t now) {
  uint64_t at = 0;
  for (int i = 0; i < 2; ++i) {
    if (bucket[i] == kNoBucket || !view_.usable || bucket[i] >= view_.set.count) continue;
    const BucketParams& bp = view_.params[bucket[i]];
    uint64_t tat = state(p, bucket[i]).tat_ns.load(std::memory_order_acquire);
    if (tat > now + bp.max_ahead_ns) continue;  // garbage: bucket_take forgets it
    at = std::max(at, bucket_eligible(bp, tat, now, kSlackNs));
  }
  return at;
}

void Loop::settle(Thread& th, Proc& p, bool have_io, const SvIo& io) {
  Owed& o = th.owed;
  if (!o.active) return;
  o.active = false;
  uint64_t moved = o.asked == UINT64_MAX ? 0 : o.asked;  // no counters: trust the size asked
  if (have_io) {
    if (o.moved == SvMoved::ReadChar) moved = io.rchar >= th.io.rchar ? io.rchar - th.io.rchar : 0;
    else moved = io.wchar >= th.io.wchar ? io.wchar - th.io.wchar : 0;
    moved = std::min(moved, o.asked);
  }
  if (moved >= o.prepaid) count(p, o.call, 0, moved - o.prepaid);
  else count(p, o.call, 0, static_cast<uint64_t>(-static_cast<int64_t>(o.prepaid - moved)));  // sums are mod 2^64
  if (o.view_seq != view_.seq) return;  // the buckets were renumbered meanwhile
  uint64_t now = mono_ns();
  for (uint8_t b : o.bucket) {
    if (b == kNoBucket || !view_.usable || b >= view_.set.count) continue;
    if (view_.params[b].per_call) {  // one call: a prepaid write paid it when it went
      if (!o.prepaid && o.moved == SvMoved::ReadChar) charge(th, b, 1, true);
      if (!o.prepaid && o.moved == SvMoved::WriteChar) charge(th, b, 1, true);
    } else if (moved > o.prepaid) {
      charge(th, b, moved - o.prepaid, true);
    } else if (moved < o.prepaid) {
      give_back(th, p, b, o.prepaid - moved, now);
    }
  }
}

uint64_t Loop::asked_bytes(const SvSyscall& sc, const seccomp_notif& req) {
  const auto* a = req.data.args;
  int tid = static_cast<int>(req.pid);
  uint64_t total = UINT64_MAX;
  switch (sc.size) {
    case SvSize::None: return 0;
    case SvSize::Arg: return a[sc.size_arg];
    case SvSize::Iov:
      if (!sv_iov_total(tid, a[sc.size_arg - 1], a[sc.size_arg], total)) total = UINT64_MAX;
      return total;
    case SvSize::Msg: {
      msghdr m{};
      if (!sv_mem_read(tid, a[sc.size_arg], &m, sizeof m)) return UINT64_MAX;
      if (!sv_iov_total(tid, reinterpret_cast<uint64_t>(m.msg_iov), m.msg_iovlen, total)) return UINT64_MAX;
      return total;
    }
    case SvSize::Mmsg: {
      uint64_t n = std::min<uint64_t>(a[sc.size_arg], 1024), sum = 0;
      for (uint64_t i = 0; i < n; ++i) {
        mmsghdr m{};
        uint64_t one = 0;
        if (!sv_mem_read(tid, a[sc.size_arg - 1] + i * sizeof(mmsghdr), &m, sizeof m) ||
            !sv_iov_total(tid, reinterpret_cast<uint64_t>(m.msg_hdr.msg_iov), m.msg_hdr.msg_iovlen, one))
          return UINT64_MAX;
        sum += one;
      }
      return sum;
    }
  }
  return UINT64_MAX;
}

void Loop::respond(uint64_t id) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  seccomp_notify_respond(fd_, &resp);  // ENOENT: interrupted or killed meanwhile; nothing to do
}

void Loop::hold(Held h, Proc& p) {
  ++stats_.deferred;
  if (p.slot) slot_wait_enter(p.slot);
  held_.push_back(h);
}

void Loop::release(Held& h, Proc* p, uint64_t now) {
  if (!p) {
    auto it = procs_.find(h.tgid);
    p = it == procs_.end() ? nullptr : &it->second;
  }
  if (p && p->slot) {
    slot_wait_leave(p->slot);
    auto c = static_cast<size_t>(h.call);
    if (h.call != CallId::count_) {
      uint64_t waited = now > h.since ? now - h.since : 1;
      p->slot->counters.throttled[c].fetch_add(1, std::memory_order_relaxed);
      p->slot->counters.wait_ns[c].fetch_add(waited, std::memory_order_relaxed);
      wait_hist_add(&seg_.seg().wait_hist, h.call, waited);  // p->slot is null once the segment is lost
    }
  }
  if (h.wait_fd >= 0) ::close(h.wait_fd);
  h.wait_fd = -1;
  respond(h.id);
}

void Loop::handle(const seccomp_notif& req) {
  ++stats_.notifications;
  view_refresh();
  const SvSyscall* sc = req.data.arch == AUDIT_ARCH_X86_64 ? sv_syscall(req.data.nr) : nullptr;
  Thread* th = sc ? thread_get(static_cast<int>(req.pid)) : nullptr;
  Proc* p = th ? proc_get(th->tgid) : nullptr;
  if (!p) return respond(req.id);  // not ours to charge (gone, foreign ABI)
  SvIo io{};
  bool have_io = th->io_fd >= 0 && sv_io_read(th->io_fd, io);
  settle(*th, *p, have_io, io);
  if (have_io) th->io = io;
  if (!view_.usable) return count(*p, sc->call, 1, 0), respond(req.id);

  const auto* a = req.data.args;
  CallId call = sc->call;
  if (sc->alt != CallId::count_ && a[4] == 0) call = sc->alt;  // send/recv: no address
  bool fd_sensitive = view_.table.fd_sensitive;
  int fd = sc->fd_arg >= 0 ? static_cast<int>(a[sc->fd_arg]) : -1;
  FdKind kind = !fd_sensitive ? FdKind::Socket : sv_fd_kind(th->tgid, fd);
  if (!fd_sensitive && fd < 0) kind = FdKind::None;
  Held h{req.id, th->tid, th->tgid, call, 0, mono_ns()};
  h.bucket[0] = view_.table.bucket_of[static_cast<size_t>(call)][fd_sensitive ? static_cast<size_t>(kind) : 0];
  if (sc->src_fd_arg >= 0) {  // zero-copy: also a read of its source, each bucket once
    CallId src = a[sc->src_off_arg] ? CallId::pread : CallId::read;
    int sfd = static_cast<int>(a[sc->src_fd_arg]);
    size_t sk = fd_sensitive ? static_cast<size_t>(sv_fd_kind(th->tgid, sfd)) : 0;
    uint8_t b = view_.table.bucket_of[static_cast<size_t>(src)][sk];
    if (b != h.bucket[0]) h.bucket[1] = b;
  }
  count(*p, call, 1, 0);
  bool limited = h.bucket[0] != kNoBucket || h.bucket[1] != kNoBucket;
  uint64_t asked = asked_bytes(*sc, req);
  uint64_t now = mono_ns();
  if (sc->moved == SvMoved::ReadChar) {  // what it moved shows at its next call
    th->owed = Owed{true, sc->moved, call, {h.bucket[0], h.bucket[1]}, asked, 0, view_.seq};
  } else if (sc->moved == SvMoved::WriteChar) {
    // A write from memory pays what it asks before it goes (the next call gives back what
    // it did not move), so that a process's last write is paid too. A zero-copy call asks
    // for an upper bound (cp and Go ask for 1 GiB and more): it pays what moved, after.
    uint64_t prepaid = asked == UINT64_MAX || sc->src_fd_arg >= 0 ? 0 : asked;
    if (prepaid) {
      charge(*th, h.bucket[0], prepaid);
      charge(*th, h.bucket[1], prepaid);
    }
    count(*p, call, 0, prepaid);  // corrected to what moved at its next call
    th->owed = Owed{true, sc->moved, call, {h.bucket[0], h.bucket[1]}, asked, prepaid, view_.seq};
  } else {
    // Not in the thread's counters: charged now by what it asked, cut to what its source
    // holds when that shows (a receive, a splice out of a pipe or socket).
    uint64_t est = sc->moved == SvMoved::Unit || asked == UINT64_MAX ? 0 : asked;
    int src_fd = !sc->is_write ? fd : sc->src_fd_arg >= 0 ? static_cast<int>(a[sc->src_fd_arg]) : -1;
    if (limited && sc->moved == SvMoved::Asked && src_fd >= 0) {
      int copy = sv_fd_copy(p->pidfd, src_fd);
      long q = sv_bytes_queued(copy);
      if (q > 0) {
        est = std::min<uint64_t>(est, static_cast<uint64_t>(q));
      } else if (q == 0 && !sc->is_write) {
        int fl = ::fcntl(copy, F_GETFL);
        bool nonblock = (fl >= 0 && (fl & O_NONBLOCK)) || (sc->nr == SYS_recvfrom && (a[3] & MSG_DONTWAIT)) ||
                        (sc->nr == SYS_recvmsg && (a[2] & MSG_DONTWAIT));
        if (!nonblock) {  // a receive that will wait for data: held here until it comes
          h.wait_fd = copy;
          h.asked = est;
          hold(h, *p);
          return;
        }
        est = 0;  // it fails with EAGAIN
      }
      if (copy >= 0) ::close(copy);
    }
    charge(*th, h.bucket[0], est);
    charge(*th, h.bucket[1], est);
    count(*p, call, 0, est);
  }
  if (!limited) return pay(*th, *p, now), respond(req.id);
  h.deadline = hold_until(*th, *p, h.bucket, now);
  if (!h.deadline) return respond(req.id);
  hold(h, *p);
}

void Loop::proc_drop(Proc& p) {
  if (p.slot) slot_release(seg_.seg(), *p.slot);
  if (p.pidfd >= 0) ::close(p.pidfd);
  p.slot = nullptr;
  p.pidfd = -1;
}

void Loop::sweep(uint64_t now) {
  if (now - last_sweep_ < kSweepNs) return;
  last_sweep_ = now;
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
    SvIo io;
    bool gone = !procs_.count(it->second.tgid) || it->second.io_fd < 0 || !sv_io_read(it->second.io_fd, io);
    if (gone) {
      if (it->second.io_fd >= 0) ::close(it->second.io_fd);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

SupervisorStats Loop::run() {
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  if (seccomp_notify_alloc(&req, &resp) != 0) return stats_;
  // A truncated segment must not kill the supervisor (SIGBUS): its service would then
  // see every limited call fail.
  shm_guard_register(&seg_.seg(), sizeof(ShmSegment));
  std::vector<pollfd> fds;
  for (;;) {
    uint64_t now = mono_ns();
    // Calls whose debt is paid, or whose socket has data, go.
    for (size_t i = 0; i < held_.size();) {
      Held& h = held_[i];
      bool go = h.deadline && now >= h.deadline;
      if (go) {  // paid down: unless this thread still owes its buckets a piece
        auto pit = procs_.find(h.tgid);
        auto tit = threads_.find(h.tid);
        if (pit != procs_.end() && tit != threads_.end()) {
          h.deadline = hold_until(tit->second, pit->second, h.bucket, now);
          go = !h.deadline;
        }
      }
      if (!go && h.wait_fd >= 0) {
        pollfd one{h.wait_fd, POLLIN, 0};
        if (::poll(&one, 1, 0) > 0) {  // data (or EOF, an error): charge what is there
          auto pit = procs_.find(h.tgid);
          auto tit = threads_.find(h.tid);
          long q = sv_bytes_queued(h.wait_fd);
          uint64_t est = q > 0 ? std::min<uint64_t>(h.asked, static_cast<uint64_t>(q)) : 0;
          ::close(h.wait_fd);
          h.wait_fd = -1;
          if (pit != procs_.end() && tit != threads_.end()) {
            charge(tit->second, h.bucket[0], est);
            charge(tit->second, h.bucket[1], est);
            count(pit->second, h.call, 0, est);
            h.deadline = hold_until(tit->second, pit->second, h.bucket, now);
          }
          go = !h.deadline;
        } else if (seccomp_notify_id_valid(fd_, h.id) != 0) {  // interrupted or killed
          ::close(h.wait_fd);
          h.wait_fd = -1;
          auto pit = procs_.find(h.tgid);
          if (pit != procs_.end() && pit->second.slot) slot_wait_leave(pit->second.slot);
          held_[i] = held_.back();
          held_.pop_back();
          continue;
        }
      }
      if (go) {
        release(h, nullptr, now);
        held_[i] = held_.back();
        held_.pop_back();
        continue;
      }
      ++i;
    }
    sweep(now);
    uint64_t wake = 0;
    bool waiting_fd = false;
    for (const Held& h : held_) {
      if (h.deadline && (!wake || h.deadline < wake)) wake = h.deadline;
      if (h.wait_fd >= 0) waiting_fd = true;
    }
    uint64_t timeout_ns = 500'000'000;
    if (wake) timeout_ns = std::min<uint64_t>(timeout_ns, wake > now ? wake - now : 0);
    if (waiting_fd) timeout_ns = std::min<uint64_t>(timeout_ns, kValidCheckMs * 1'000'000ull);
    fds.assign(1, pollfd{fd_, POLLIN, 0});
    for (const Held& h : held_)
      if (h.wait_fd >= 0) fds.push_back(pollfd{h.wait_fd, POLLIN, 0});
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      std::memset(req, 0, sizeof *req);
      if (seccomp_notify_receive(fd_, req) == 0) handle(*req);
      continue;
    }
    if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) break;  // no task uses the filter any more
  }
  for (auto& h : held_)
    if (h.wait_fd >= 0) ::close(h.wait_fd);
  held_.clear();
  for (auto& [pid, p] : procs_) proc_drop(p);
  seccomp_notify_free(req, resp);
  return stats_;
}

}  // namespace

SupervisorStats supervise(int notify_fd, Segment& seg, const std::vector<int>& notified) {
  Loop loop(notify_fd, seg, notified);
  return loop.run();
}

}  // namespace bonsai::ctl
