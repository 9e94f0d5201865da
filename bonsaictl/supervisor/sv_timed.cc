// SPDX-License-Identifier: MIT
// The loop's side of protected reads (sv_protect.h): a read that may go is made on a
// copy of its descriptor, here if the page cache answers it at once (RWF_NOWAIT), else
// by a worker, which answers it; then the loop records the real call's time in the
// service's histogram and charges the read by what it moved (as it settles any read:
// the reservation given back or the rest charged late). A read that was not made goes
// with CONTINUE, as every read did before, settled at the thread's next call by its
// counters.
#include <fmt/core.h>
#include <seccomp.h>
#include <unistd.h>

#include <algorithm>

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
  if (t.fd_copy >= 0) {
    // From the page cache here at once (no thread to wake: a few microseconds);
    // what would wait for a disk, by a worker.
    SvTimedOutcome o = sv_timed_make(t, timed_scratch_, true);
    if (o == SvTimedOutcome::Made) {
      sv_timed_deliver(t, timed_scratch_, false);  // the loop's thread: no notification is received meanwhile
      return timed_complete(t);
    }
    if (o == SvTimedOutcome::Blocks && timed_.submit(t)) return;
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
  std::vector<SvTimedRead> done;
  timed_.done(done);
  int at = fd_;  // the listener of a notification being handled (Loop::handle) stays its own
  for (SvTimedRead& t : done) timed_complete(t);
  fd_ = at;
}

void Loop::timed_complete(SvTimedRead& t) {
  {
    auto pit = procs_.find(t.tgid);
    auto tit = threads_.find(t.tid);
    Proc* p = pit == procs_.end() ? nullptr : &pit->second;
    Thread* th = tit == threads_.end() ? nullptr : &tit->second;
    bool listening = false;  // an ended tree's listener is closed (its number may be another's now)
    for (const Listener& l : listeners_) listening = listening || l.fd == t.lfd;
    fd_ = t.lfd;
    if (!t.made) {
      if (t.fd_copy >= 0) ::close(t.fd_copy);
      // Interrupted meanwhile, the call restarts as a new notification, which may have
      // come already: this one's reservation is given back, the thread's state left alone.
      bool valid = listening && seccomp_notify_id_valid(fd_, t.id) == 0;
      if (valid && th && p) return timed_continue(*th, t.call, t.bucket, t.asked, t.reserved, t.view_seq, t.id);
      if (th && p) {
        Owed o{true, SvMoved::ReadChar, t.call, {t.bucket[0], t.bucket[1]}, t.asked, t.reserved, t.view_seq, 0};
        settle_moved(*th, *p, o, 0);
      }
      if (valid) respond(t.id);
      return;
    }
    bool answered = t.answered > 0;
    if (t.fd_copy >= 0) ::close(t.fd_copy);
    if (answered) {
      ++stats_.timed;
      if (!lost_) protect_hist_add(&seg_.seg().protect, t.ns);
    }
    if (th) th->timed_lost = answered ? 0 : static_cast<uint8_t>(std::min(th->timed_lost + 1, 255));
    if (th && p) {
      Owed o{true, SvMoved::ReadChar, t.call, {t.bucket[0], t.bucket[1]}, t.asked, t.reserved, t.view_seq, 0};
      settle_moved(*th, *p, o, answered && t.r > 0 ? static_cast<uint64_t>(t.r) : 0);
    }
  }
}

}  // namespace bonsai::ctl
