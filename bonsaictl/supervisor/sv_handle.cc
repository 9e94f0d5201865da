// SPDX-License-Identifier: MIT
// The supervisor's notification handler (sv_handle.h): decode -> look up -> one
// strategy per kind -> a disposition.
#include "supervisor/sv_handle.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "supervisor/sv_answer.h"
#include "supervisor/sv_compat.h"
#include "supervisor/sv_emulate.h"
#include "supervisor/sv_say.h"
#include "supervisor/sv_target.h"
#include "sys/clock.h"

#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003eu
#endif

namespace bonsai::ctl {

bool SvHandler::decode(const seccomp_notif& in, int lfd, SvCall& c) {
  // x32 (a strict filter notifies its data calls): not supervised here, so refused.
  if (in.data.arch == AUDIT_ARCH_X86_64 && (in.data.nr & kX32SyscallBit)) {
    sv_respond_value(lfd, in.id, -ENOSYS);
    return false;
  }
  // A task this supervisor cannot see (pid 0: of a pid namespace that is not its own nor
  // below it) can be neither charged nor counted: its limited calls fail, never go free.
  if (in.pid == 0) {
    if (!said_unseen_) {
      said_unseen_ = true;
      sv_say(fmt::format("bonsaictl supervisor ({}): a process this supervisor cannot see (another pid "
                         "namespace's) made a limited call: it cannot be charged, so its limited calls fail "
                         "(EPERM)\n", seg_.service()));
    }
    sv_respond_value(lfd, in.id, -EPERM);
    return false;
  }
  // A 32-bit call (strict mode): in the 64-bit table's form from here on; its memory
  // layouts are read as 32-bit ones (compat) and no zero-copy call is made for it.
  c.req = in;
  c.lfd = lfd;
  c.compat = in.data.arch == kAuditArchI386;
  if (c.compat) {
    SvCompatCall cc;
    if (sv_compat_call(in.data.nr, in.data.args, static_cast<int>(in.pid), cc)) {
      c.sc = cc.sc;
      c.req.data.nr = c.sc->nr;
      std::memcpy(c.req.data.args, cc.args, sizeof c.req.data.args);
    }
  } else if (in.data.arch == AUDIT_ARCH_X86_64) {
    c.sc = sv_syscall(in.data.nr);
  }
  return true;
}

uint64_t SvHandler::asked_bytes(const SvCall& c) {
  const SvSyscall& sc = *c.sc;
  const auto* a = c.req.data.args;
  int tid = static_cast<int>(c.req.pid);
  if (c.compat) return sv_compat_asked(sc, a, tid);
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

void SvHandler::handle(const seccomp_notif& in, int lfd) {
  ++stats_.notifications;
  // 1. Decode.
  SvCall c;
  if (!decode(in, lfd, c)) return;
  const seccomp_notif& req = c.req;
  const SvSyscall* sc = c.sc;

  // 2. Look up: the thread and process, the thread's last call settled, the buckets and the size.
  Thread* th = sc ? ledger_.thread_get(static_cast<int>(req.pid)) : nullptr;
  Proc* p = th ? ledger_.proc_get(th->tgid) : nullptr;
  if (!p) return sv_respond(lfd, req.id);  // not ours to charge (gone, foreign ABI)
  if (p->slot) p->slot->sv_calls.fetch_add(1, std::memory_order_relaxed);
  for (Place& pl : th->place) pl = Place{};  // a new call: its own place in the queues
  // The counters are read only for a call to settle (the last one's) or one that will be.
  SvIo io{};
  bool have_io = th->owed.active && th->io_fd >= 0 && sv_io_read(th->io_fd, io);
  if (th->owed.active && !have_io && !th->blind) th->blind = true, ledger_.say_blind(*th, "the I/O counters");
  ledger_.settle(*th, *p, have_io, io);
  if (have_io) th->io = io;
  th->io_now = have_io;
  // A read at an offset the service's protect: names (sv_protect.h): made and timed here once it may go.
  SvTimedArgs timed{};
  bool is_timed = (lim_.protect_calls() & call_bit(sc->call)) && !c.compat && sv_timed_args(*sc, req.data.args, timed);
  if (is_timed && th->timed_lost >= kSvTimedLostMax) is_timed = false, th->timed_lost = 0;  // this one the kernel's
  const SvView& view = lim_.view();
  if (!view.usable) {
    ledger_.count(*p, sc->call, 1, 0);
    if (!is_timed) return sv_respond(lfd, req.id);
    Held h{req.id, th->tid, th->tgid, sc->call, 0, mono_ns()};
    h.lfd = lfd;
    h.timed = timed;
    h.asked = timed.iovcnt ? asked_bytes(c) : timed.count;
    return timed_.go(h, *th, *p);
  }
  const auto* a = req.data.args;
  CallId call = sc->call;
  if (sc->alt != CallId::count_ && a[4] == 0) call = sc->alt;  // send/recv: no address
  const LimitsView& lim = view.lim;
  // The descriptor's kind is looked up only when a rule depends on it (view_bucket).
  auto kind_of = [&](int fd) { return lim.table.fd_sensitive ? sv_fd_kind(th->tgid, fd) : FdKind::None; };
  int fd = sc->fd_arg >= 0 ? static_cast<int>(a[sc->fd_arg]) : -1;
  Held h{req.id, th->tid, th->tgid, call, 0, mono_ns()};
  h.lfd = lfd;
  if (is_timed) h.timed = timed;
  h.bucket[0] = view_bucket(lim, call, kind_of(fd));
  if (sc->src_fd_arg >= 0) {  // zero-copy: also a read of its source, each bucket once
    CallId src = a[sc->src_off_arg] ? CallId::pread : CallId::read;
    uint8_t b = view_bucket(lim, src, kind_of(static_cast<int>(a[sc->src_fd_arg])));
    if (b != h.bucket[0]) h.bucket[1] = b;
  }
  ledger_.count(*p, call, 1, 0);
  bool limited = h.bucket[0] != kNoBucket || h.bucket[1] != kNoBucket;
  uint64_t asked = asked_bytes(c);
  // A size nothing will correct (what it moved does not show in counters it can read):
  // the most a call can move, never nothing.
  if (asked == UINT64_MAX && limited && sc->size != SvSize::None &&
      (th->blind || sc->moved == SvMoved::Asked)) {
    ledger_.say_blind(*th, "the memory (the size of an iovec or message)");
    asked = kSvUnknownMax;
  }
  uint64_t now = mono_ns();

  // 3. One strategy per kind, 4. its disposition.
  // A write on a descriptor that must not wait takes its turn in the queue (sv_pace.h).
  if (limited) {
    switch (pacer_.pace(*sc, a, c.compat, *th, *p, h, asked, now)) {
      case SvPaceWay::No: break;
      case SvPaceWay::Make: return dispose(SvGo::Make, h, *th, *p, now);
      case SvPaceWay::Go: return dispose(SvGo::Continue, h, *th, *p, now);
      case SvPaceWay::Hold: return dispose(SvGo::Hold, h, *th, *p, now);
    }
  }
  // Whose size is known only afterwards: reserve before it goes, so that the calls of
  // many threads queue behind each other in the bucket (sv_emulate.h). A zero-copy
  // call whose ends cannot wait is made here, cut to its reservation.
  uint64_t reserve = limited ? sv_reserve_bytes(asked, view.params(h.bucket[0]), view.params(h.bucket[1])) : 0;
  if (reserve && sc->src_fd_arg >= 0 && !c.compat &&
      sv_emu_prepare(*sc, a, p->pidfd, sv_reserve_share(reserve, held_.emu_held()), h.emu))
    return dispose(zero_copy(*th, *p, h, now), h, *th, *p, now);
  if (sc->moved == SvMoved::ReadChar) {
    read_later(c, *th, h, asked, reserve);
  } else if (sc->moved == SvMoved::WriteChar) {
    write_prepaid(c, *th, *p, h, asked, reserve);
  } else if (!charged_as_asked(c, *th, *p, h, asked, fd)) {
    return dispose(SvGo::Hold, h, *th, *p, now);  // a receive that will wait for data
  }
  dispose(when_paid(*th, *p, h, limited, now), h, *th, *p, now);
}

SvGo SvHandler::zero_copy(Thread& th, Proc& p, Held& h, uint64_t now) {
  h.reserved[0] = h.reserved[1] = h.emu.count;
  ledger_.charge(th, h.bucket[0], h.emu.count);
  ledger_.charge(th, h.bucket[1], h.emu.count);
  h.deadline = ledger_.hold_until(th, p, h.bucket, now);
  if (!h.deadline) return SvGo::Make;
  held_.emu_add();
  return SvGo::Hold;
}

void SvHandler::read_later(const SvCall& c, Thread& th, Held& h, uint64_t asked, uint64_t reserve) {
  // What it moved shows at its next call (given back or charged late then); one
  // chunk of it is paid before it goes.
  if (reserve) {
    ledger_.charge(th, h.bucket[0], reserve);
    ledger_.charge(th, h.bucket[1], reserve);
  }
  // Counted in the stats when it is settled, by what moved: a thread's last read (the
  // empty one at the end of a file) leaves its reservation in the bucket, not in stat.
  if (h.timed.nr >= 0) {  // settled when the worker has made it (SvTimedReads::finish)
    h.asked = asked;
    h.timed_reserve = reserve;
  } else {
    ledger_.io_baseline(th);
    th.owed = Owed{true, c.sc->moved, h.call, {h.bucket[0], h.bucket[1]}, asked, reserve, lim_.view().seq, 0};
  }
}

void SvHandler::write_prepaid(const SvCall& c, Thread& th, Proc& p, Held& h, uint64_t asked, uint64_t reserve) {
  const SvSyscall& sc = *c.sc;
  // A write from memory pays what it asks before it goes (the next call gives back what
  // it did not move), so that a process's last write is paid too. A zero-copy call asks
  // for an upper bound (cp and Go ask for 1 GiB and more): it pays one chunk before it
  // goes and what moved beyond it after.
  uint64_t prepaid = asked == UINT64_MAX || sc.src_fd_arg >= 0 ? reserve : asked;
  if (prepaid) {
    ledger_.charge(th, h.bucket[0], prepaid);
    ledger_.charge(th, h.bucket[1], prepaid);
  }
  uint64_t counted = sc.src_fd_arg >= 0 ? 0 : prepaid;  // a reservation: counted when settled
  ledger_.count(p, h.call, 0, counted);  // corrected to what moved at its next call
  ledger_.io_baseline(th);
  th.owed = Owed{true, sc.moved, h.call, {h.bucket[0], h.bucket[1]}, asked, prepaid, lim_.view().seq, counted};
}

bool SvHandler::charged_as_asked(const SvCall& c, Thread& th, Proc& p, Held& h, uint64_t asked, int fd) {
  const SvSyscall& sc = *c.sc;
  const auto* a = c.req.data.args;
  bool limited = h.bucket[0] != kNoBucket || h.bucket[1] != kNoBucket;
  // Not in the thread's counters: charged now by what it asked, cut to what its source
  // holds when that shows (a receive, a splice out of a pipe or socket).
  uint64_t est = sc.moved == SvMoved::Unit || asked == UINT64_MAX ? 0 : asked;
  int src_fd = !sc.is_write ? fd : sc.src_fd_arg >= 0 ? static_cast<int>(a[sc.src_fd_arg]) : -1;
  if (limited && sc.moved == SvMoved::Asked && src_fd >= 0) {
    int copy = sv_fd_copy(p.pidfd, src_fd);
    long q = sv_bytes_queued(copy);
    if (q > 0) {
      est = std::min<uint64_t>(est, static_cast<uint64_t>(q));
    } else if (q == 0 && !sc.is_write) {
      int fl = ::fcntl(copy, F_GETFL);
      bool nonblock = (fl >= 0 && (fl & O_NONBLOCK)) || (sc.nr == SYS_recvfrom && (a[3] & MSG_DONTWAIT)) ||
                      (sc.nr == SYS_recvmsg && (a[2] & MSG_DONTWAIT));
      if (!nonblock) {  // a receive that will wait for data: held here until it comes
        h.wait_fd = copy;
        h.asked = est;
        return false;
      }
      est = 0;  // it fails with EAGAIN
    }
    if (copy >= 0) ::close(copy);
  }
  ledger_.charge(th, h.bucket[0], est);
  ledger_.charge(th, h.bucket[1], est);
  ledger_.count(p, h.call, 0, est);
  return true;
}

SvGo SvHandler::when_paid(Thread& th, Proc& p, Held& h, bool limited, uint64_t now) {
  SvGo go = h.timed.nr >= 0 ? SvGo::Timed : SvGo::Continue;
  if (!limited) {
    ledger_.pay(th, p, now, false);
    return go;
  }
  h.deadline = ledger_.hold_until(th, p, h.bucket, now);
  return h.deadline ? SvGo::Hold : go;
}

void SvHandler::dispose(SvGo go, Held& h, Thread& th, Proc& p, uint64_t now) {
  switch (go) {
    case SvGo::Continue: return sv_respond(h.lfd, h.id);
    case SvGo::Hold: return held_.hold(h, p);
    case SvGo::Make: return emulate(h, now);
    case SvGo::Timed: return timed_.go(h, th, p);
  }
}

void SvHandler::held_go(Held& h, Proc* p, uint64_t now) {
  if (h.emu.nr >= 0) return emulate(h, now);
  if (h.timed.nr >= 0) {
    Thread* th = ledger_.thread_find(h.tid);
    if (p && th) return timed_.go(h, *th, *p);
  }
  sv_respond(h.lfd, h.id);
}

void SvHandler::emulate(Held& h, uint64_t now) {
  Proc* p = ledger_.proc_find(h.tgid);
  Thread* th = ledger_.thread_find(h.tid);
  // Interrupted (a signal: the call restarts as a new notification) or killed: not made.
  bool valid = seccomp_notify_id_valid(h.lfd, h.id) == 0;
  int64_t r = valid ? sv_emu_perform(h.emu, h.tid) : 0;
  sv_emu_close(h.emu);
  h.emu.nr = -1;
  uint64_t moved = r > 0 ? static_cast<uint64_t>(r) : 0;
  if (th && p) {  // a gone thread's debt went with it: nothing to give back
    for (int i = 0; i < 2; ++i) {
      const BucketParams* bp = lim_.params(h.bucket[i]);
      if (!bp || bp->per_call) continue;  // a call-rate bucket: the call is made (or was tried)
      SvSettle s = sv_settle(h.reserved[i], moved);  // an emulated call moves at most what it reserved
      if (!s.give_back) continue;
      // A paced call's units were taken directly, not owed: nothing of the thread's debt to forget.
      if (h.paced) bucket_give_back(ledger_.state(*p, h.bucket[i]), *bp, s.give_back, now);
      else ledger_.give_back(*th, *p, h.bucket[i], s.give_back, now);
    }
  }
  if (p) ledger_.count(*p, h.call, 0, moved);
  if (valid) sv_respond_value(h.lfd, h.id, r);
}

}  // namespace bonsai::ctl
