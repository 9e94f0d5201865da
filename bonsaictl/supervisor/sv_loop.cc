// SPDX-License-Identifier: MIT
// The supervisor's loop (see sv_loop.h), and supervise(), the room's entry point
// (supervisor.h: the face the launch sees; the loop's state stays in sv_loop.h): one thread, one poll -- the
// listener, the sockets of receives waiting for data, and the earliest deadline of a
// held call -- and what one notification does: find the call's buckets, charge what
// it asks (or owe it until the thread's next call), answer CONTINUE or hold it.
#include "supervisor/sv_loop.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm/shm_guard.h"
#include "supervisor/sv_compat.h"
#include "supervisor/supervisor.h"
#include "supervisor/sv_say.h"
#include "sys/clock.h"

#include <linux/seccomp.h>
#include <sys/ioctl.h>


#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003eu
#endif

namespace bonsai::ctl {

uint64_t Loop::asked_bytes(const SvSyscall& sc, const seccomp_notif& req) {
  const auto* a = req.data.args;
  int tid = static_cast<int>(req.pid);
  if (compat_) return sv_compat_asked(sc, a, tid);
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

void Loop::respond_value(uint64_t id, int64_t r) {
  seccomp_notif_resp resp{};
  resp.id = id;
  resp.val = r >= 0 ? r : 0;
  resp.error = r < 0 ? static_cast<int32_t>(r) : 0;
  seccomp_notify_respond(fd_, &resp);  // ENOENT: interrupted meanwhile (see Loop::emulate)
}

void Loop::handle(const seccomp_notif& in) {
  ++stats_.notifications;
  view_refresh();
  // Reads workers made and answered: charged before the next call of their threads.
  if (timed_.in_flight()) timed_finish();
  // x32 (a strict filter notifies its data calls): not supervised here, so refused.
  if (in.data.arch == AUDIT_ARCH_X86_64 && (in.data.nr & kX32SyscallBit)) return respond_value(in.id, -ENOSYS);
  // A task this supervisor cannot see (pid 0: of a pid namespace that is not its own nor
  // below it) can be neither charged nor counted: its limited calls fail, never go free.
  if (in.pid == 0) {
    if (!said_unseen_) {
      said_unseen_ = true;
      sv_say(fmt::format("bonsaictl supervisor ({}): a process this supervisor cannot see (another pid "
                         "namespace's) made a limited call: it cannot be charged, so its limited calls fail "
                         "(EPERM)\n", seg_.service()));
    }
    return respond_value(in.id, -EPERM);
  }
  // A 32-bit call (strict mode): in the 64-bit table's form from here on; its memory
  // layouts are read as 32-bit ones (compat_) and no zero-copy call is made for it.
  seccomp_notif req = in;
  compat_ = in.data.arch == kAuditArchI386;
  const SvSyscall* sc = nullptr;
  if (compat_) {
    SvCompatCall cc;
    if (sv_compat_call(in.data.nr, in.data.args, static_cast<int>(in.pid), cc)) {
      sc = cc.sc;
      req.data.nr = sc->nr;
      std::memcpy(req.data.args, cc.args, sizeof req.data.args);
    }
  } else if (in.data.arch == AUDIT_ARCH_X86_64) {
    sc = sv_syscall(in.data.nr);
  }
  Thread* th = sc ? thread_get(static_cast<int>(req.pid)) : nullptr;
  Proc* p = th ? proc_get(th->tgid) : nullptr;
  if (!p) return respond(req.id);  // not ours to charge (gone, foreign ABI)
  if (p->slot) p->slot->sv_calls.fetch_add(1, std::memory_order_relaxed);
  for (Place& pl : th->place) pl = Place{};  // a new call: its own place in the queues
  // The counters are read only for a call to settle (the last one's) or one that will be.
  SvIo io{};
  bool have_io = th->owed.active && th->io_fd >= 0 && sv_io_read(th->io_fd, io);
  if (th->owed.active && !have_io && !th->blind) th->blind = true, say_blind(*th, "the I/O counters");
  settle(*th, *p, have_io, io);
  if (have_io) th->io = io;
  th->io_now = have_io;
  // A read at an offset the service's protect: names (sv_protect.h): made and timed here once it may go.
  SvTimedArgs timed{};
  bool is_timed = (protect_calls_ & call_bit(sc->call)) && !compat_ && sv_timed_args(*sc, req.data.args, timed);
  if (is_timed && th->timed_lost >= kSvTimedLostMax) is_timed = false, th->timed_lost = 0;  // this one the kernel's
  if (!view_.usable) {
    count(*p, sc->call, 1, 0);
    if (!is_timed) return respond(req.id);
    Held h{req.id, th->tid, th->tgid, sc->call, 0, mono_ns()};
    h.timed = timed;
    h.asked = timed.iovcnt ? asked_bytes(*sc, req) : timed.count;
    return timed_go(h, *th, *p);
  }

  const auto* a = req.data.args;
  CallId call = sc->call;
  if (sc->alt != CallId::count_ && a[4] == 0) call = sc->alt;  // send/recv: no address
  const LimitsView& lim = view_.lim;
  // The descriptor's kind is looked up only when a rule depends on it (view_bucket).
  auto kind_of = [&](int fd) { return lim.table.fd_sensitive ? sv_fd_kind(th->tgid, fd) : FdKind::None; };
  int fd = sc->fd_arg >= 0 ? static_cast<int>(a[sc->fd_arg]) : -1;
  Held h{req.id, th->tid, th->tgid, call, 0, mono_ns()};
  if (is_timed) h.timed = timed;
  h.bucket[0] = view_bucket(lim, call, kind_of(fd));
  if (sc->src_fd_arg >= 0) {  // zero-copy: also a read of its source, each bucket once
    CallId src = a[sc->src_off_arg] ? CallId::pread : CallId::read;
    uint8_t b = view_bucket(lim, src, kind_of(static_cast<int>(a[sc->src_fd_arg])));
    if (b != h.bucket[0]) h.bucket[1] = b;
  }
  count(*p, call, 1, 0);
  bool limited = h.bucket[0] != kNoBucket || h.bucket[1] != kNoBucket;
  uint64_t asked = asked_bytes(*sc, req);
  // A size nothing will correct (what it moved does not show in counters it can read):
  // the most a call can move, never nothing.
  if (asked == UINT64_MAX && limited && sc->size != SvSize::None &&
      (th->blind || sc->moved == SvMoved::Asked)) {
    say_blind(*th, "the memory (the size of an iovec or message)");
    asked = kSvUnknownMax;
  }
  uint64_t now = mono_ns();
  // Whose size is known only afterwards: reserve before it goes, so that the calls of
  // many threads queue behind each other in the bucket (sv_emulate.h). A zero-copy
  // call whose ends cannot wait is made here, cut to its reservation.
  // A write on a descriptor that must not wait takes its turn in the queue (sv_turn.h, sv_pace.cc).
  if (limited && pace(*sc, req, *th, *p, h, asked, now)) return;
  uint64_t reserve = limited ? sv_reserve_bytes(asked, view_.params(h.bucket[0]), view_.params(h.bucket[1])) : 0;
  if (reserve && sc->src_fd_arg >= 0 && !compat_ &&
      sv_emu_prepare(*sc, a, p->pidfd, sv_reserve_share(reserve, emu_held_), h.emu)) {
    h.reserved[0] = h.reserved[1] = h.emu.count;
    charge(*th, h.bucket[0], h.emu.count);
    charge(*th, h.bucket[1], h.emu.count);
    h.deadline = hold_until(*th, *p, h.bucket, now);
    if (!h.deadline) return emulate(h, now);
    ++emu_held_;
    return hold(h, *p);
  }
  if (sc->moved == SvMoved::ReadChar) {
    // What it moved shows at its next call (given back or charged late then); one
    // chunk of it is paid before it goes.
    if (reserve) {
      charge(*th, h.bucket[0], reserve);
      charge(*th, h.bucket[1], reserve);
    }
    // Counted in the stats when it is settled, by what moved: a thread's last read (the
    // empty one at the end of a file) leaves its reservation in the bucket, not in stat.
    if (h.timed.nr >= 0) {  // settled when the worker has made it (Loop::timed_finish)
      h.asked = asked;
      h.timed_reserve = reserve;
    } else {
      io_baseline(*th);
      th->owed = Owed{true, sc->moved, call, {h.bucket[0], h.bucket[1]}, asked, reserve, view_.seq, 0};
    }
  } else if (sc->moved == SvMoved::WriteChar) {
    // A write from memory pays what it asks before it goes (the next call gives back what
    // it did not move), so that a process's last write is paid too. A zero-copy call asks
    // for an upper bound (cp and Go ask for 1 GiB and more): it pays one chunk before it
    // goes and what moved beyond it after.
    uint64_t prepaid = asked == UINT64_MAX || sc->src_fd_arg >= 0 ? reserve : asked;
    if (prepaid) {
      charge(*th, h.bucket[0], prepaid);
      charge(*th, h.bucket[1], prepaid);
    }
    uint64_t counted = sc->src_fd_arg >= 0 ? 0 : prepaid;  // a reservation: counted when settled
    count(*p, call, 0, counted);  // corrected to what moved at its next call
    io_baseline(*th);
    th->owed = Owed{true, sc->moved, call, {h.bucket[0], h.bucket[1]}, asked, prepaid, view_.seq, counted};
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
  if (!limited) {
    pay(*th, *p, now, false);
    return h.timed.nr >= 0 ? timed_go(h, *th, *p) : respond(req.id);
  }
  h.deadline = hold_until(*th, *p, h.bucket, now);
  if (!h.deadline) return h.timed.nr >= 0 ? timed_go(h, *th, *p) : respond(req.id);
  hold(h, *p);
}

SupervisorStats Loop::run() {
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  if (seccomp_notify_alloc(&req, &resp) != 0) return stats_;
  // A truncated segment must not kill the supervisor (SIGBUS): its service would then
  // see every limited call fail.
  shm_guard_register(&seg_.seg(), sizeof(ShmSegment));
  listener_add(fd_, ::fcntl(2, F_DUPFD_CLOEXEC, 3));
  std::vector<pollfd> fds;
  for (;;) {
    uint64_t now = mono_ns();
    fleet_lapse_check();  // held calls re-timed at the fallback even when no call comes
    release_due(now);
    sweep(now);
    // No tree left: ended, unless programs may still join (then after kSvLingerNs idle).
    // Never with a joiner pending: it may have loaded the filter and be sending its listener.
    if (listeners_.empty() && joiners_.empty() && (serve_.accept_fd < 0 || now - idle_since_ >= kSvLingerNs)) break;
    fds.clear();
    for (const Listener& l : listeners_) fds.push_back(pollfd{l.fd, POLLIN, 0});
    size_t nl = fds.size();
    if (serve_.accept_fd >= 0) fds.push_back(pollfd{serve_.accept_fd, POLLIN, 0});
    size_t nj = fds.size();
    for (const Joiner& j : joiners_) fds.push_back(pollfd{j.fd, POLLIN, 0});
    uint64_t timeout_ns = held_timeout(now, fds);
    if (timed_.event_fd() >= 0) fds.push_back(pollfd{timed_.event_fd(), POLLIN, 0});  // reads made by workers
    if (listeners_.empty()) timeout_ns = std::min(timeout_ns, idle_since_ + kSvLingerNs - now);
    if (!joiners_.empty()) timeout_ns = std::min<uint64_t>(timeout_ns, 100'000'000);
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) break;
    if (timed_.in_flight()) timed_finish();
    // A joiner is dropped once it sent its listener or hung up (it gave up waiting for the
    // filter: it runs the trampoline). Not on a short clock: one that has loaded the
    // filter and is about to send would lose its listener with the socket, and its
    // limited calls would then fail. A same-user peer that never sends goes after 30 s.
    for (size_t i = 0; i < joiners_.size();) {
      short ev = nj + i < fds.size() && fds[nj + i].fd == joiners_[i].fd ? fds[nj + i].revents : 0;
      if (ev || mono_ns() - joiners_[i].since > 30'000'000'000) {
        if (ev & POLLIN) join_receive(joiners_[i]);
        ::close(joiners_[i].fd);
        joiners_.erase(joiners_.begin() + static_cast<long>(i));
        fds.erase(fds.begin() + static_cast<long>(nj + i));
        continue;
      }
      ++i;
    }
    if (n <= 0) continue;
    if (serve_.accept_fd >= 0 && (fds[nl].revents & POLLIN)) join_accept();
    // One notification per listener and pass; a listener no task uses any more goes.
    for (size_t i = nl; i-- > 0;) {
      if (fds[i].revents & POLLIN) {
        fd_ = fds[i].fd;
        std::memset(req, 0, sizeof *req);
        errno = 0;
        int rc;
        {
          std::lock_guard lk(timed_.mem_mu());  // no worker writes into a target meanwhile (sv_timed_deliver)
          rc = seccomp_notify_receive(fd_, req);
        }
        if (rc == 0) handle(*req);
        else if (errno == EBADF || errno == ENOTTY || errno == EINVAL) listener_drop(i);  // not a listener: never spin on it
      } else if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
        listener_drop(i);
      }
    }
  }
  for (auto& h : held_) {
    if (h.wait_fd >= 0) ::close(h.wait_fd);
    sv_emu_close(h.emu);
  }
  held_.clear();
  while (!listeners_.empty()) listener_drop(listeners_.size() - 1);
  timed_.stop();  // reads in flight: made, not answered (their tasks are gone), their descriptors closed
  timed_finish();
  for (Joiner& j : joiners_) ::close(j.fd);
  for (auto& [pid, p] : procs_) proc_drop(p);
  seccomp_notify_free(req, resp);
  return stats_;
}

SupervisorStats supervise(int notify_fd, Segment& seg, const std::vector<int>& notified, bool strict,
                          SvServe serve) {
  Loop loop(notify_fd, seg, notified, strict, serve);
  return loop.run();
}

}  // namespace bonsai::ctl
