// SPDX-License-Identifier: MIT
// The loop's side of protected reads (sv_protect.h): a read that may go is handed to a
// worker with a copy of its descriptor; when the worker is done the loop records the
// real call's time in the service's histogram, charges the read by what it moved (as
// it settles any read: the reservation given back or the rest charged late) and
// answers it. A read the worker did not make goes with CONTINUE, as every read did
// before, and is settled at the thread's next call by its counters.
#include <fmt/core.h>
#include <seccomp.h>
#include <unistd.h>

#include "supervisor/sv_loop.h"
#include "supervisor/sv_say.h"

namespace bonsai::ctl {

void Loop::timed_continue(Thread& th, CallId call, const uint8_t bucket[2], uint64_t asked, uint64_t reserve,
                          uint64_t seq, uint64_t id) {
  th.io_now = false;  // the baseline is now: the thread has not run since its call
  io_baseline(th);
  th.owed = Owed{true, SvMoved::ReadChar, call, {bucket[0], bucket[1]}, asked, reserve, seq, 0};
  respond(id);
}

void Loop::timed_go(Held& h, Thread& th, Proc& p) {
  if (h.lfd < 0) h.lfd = fd_;
  fd_ = h.lfd;
  SvTimedRead t;
  t.id = h.id;
  t.lfd = h.lfd;
  t.tid = h.tid;
  t.tgid = h.tgid;
  t.args = h.timed;
  t.call = h.call;
  t.bucket[0] = h.bucket[0];
  t.bucket[1] = h.bucket[1];
  t.asked = h.asked;
  t.reserved = h.timed_reserve;
  t.view_seq = view_.seq;  // a held call's buckets follow the view (Loop::install)
  t.fd_copy = sv_fd_copy(p.pidfd, h.timed.fd);
  if (t.fd_copy >= 0 && timed_.submit(t)) return;
  if (t.fd_copy >= 0) {
    ::close(t.fd_copy);
  } else if (!said_untimed_) {
    said_untimed_ = true;
    sv_say(fmt::format("bonsaictl supervisor ({}): cannot copy a descriptor of pid {} (pidfd_getfd refused: Yama, "
                       "another user's process): its protected reads go untimed (docs/protect.md)\n",
                       seg_.service(), h.tgid));
  }
  timed_continue(th, h.call, h.bucket, h.asked, h.timed_reserve, view_.seq, h.id);
}

void Loop::timed_finish() {
  timed_.done(timed_done_);
  for (SvTimedRead& t : timed_done_) {
    auto pit = procs_.find(t.tgid);
    auto tit = threads_.find(t.tid);
    Proc* p = pit == procs_.end() ? nullptr : &pit->second;
    Thread* th = tit == threads_.end() ? nullptr : &tit->second;
    bool listening = false;  // an ended tree's listener is closed (its number may be another's now)
    for (const Listener& l : listeners_) listening = listening || l.fd == t.lfd;
    fd_ = t.lfd;
    if (!t.made) {
      if (t.fd_copy >= 0) ::close(t.fd_copy);
      if (!listening) continue;
      if (th && p) timed_continue(*th, t.call, t.bucket, t.asked, t.reserved, t.view_seq, t.id);
      else respond(t.id);
      continue;
    }
    bool answered = false;
    if (listening) {
      seccomp_notif_resp resp{};
      resp.id = t.id;
      resp.val = t.r >= 0 ? t.r : 0;
      resp.error = t.r < 0 ? static_cast<int32_t>(t.r) : 0;
      answered = seccomp_notify_respond(fd_, &resp) == 0;
    }
    // Not answered (a signal interrupted the call: it restarts as a new one; or it was
    // killed): what a read at the file position took is given back to that position.
    if (!answered && t.r > 0 && t.args.off < 0) ::lseek(t.fd_copy, -static_cast<off_t>(t.r), SEEK_CUR);
    if (t.fd_copy >= 0) ::close(t.fd_copy);
    if (answered) {
      ++stats_.timed;
      if (!lost_) protect_hist_add(&seg_.seg().protect, t.ns);
    }
    if (th && p) {
      Owed o{true, SvMoved::ReadChar, t.call, {t.bucket[0], t.bucket[1]}, t.asked, t.reserved, t.view_seq, 0};
      settle_moved(*th, *p, o, answered && t.r > 0 ? static_cast<uint64_t>(t.r) : 0);
    }
  }
  timed_done_.clear();
}

}  // namespace bonsai::ctl
