// SPDX-License-Identifier: MIT
// The supervisor's protected reads (sv_timed.h).
#include "supervisor/sv_timed.h"

#include <fmt/core.h>
#include <seccomp.h>
#include <unistd.h>

#include <algorithm>

#include "supervisor/sv_answer.h"
#include "supervisor/sv_say.h"

namespace bonsai::ctl {

void SvTimedReads::continue_read(Thread& th, CallId call, const uint8_t bucket[2], uint64_t asked,
                                 uint64_t reserve, uint64_t seq, int lfd, uint64_t id) {
  th.io_now = false;  // the baseline is now: the thread has not run since its call
  ledger_.io_baseline(th);
  th.owed = Owed{true, SvMoved::ReadChar, call, {bucket[0], bucket[1]}, asked, reserve, seq, 0};
  sv_respond(lfd, id);
}

void SvTimedReads::go(Held& h, Thread& th, Proc& p) {
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
  t.view_seq = lim_.view().seq;  // a held call's buckets follow the view (SvHeldQueue::follow)
  t.fd_copy = sv_fd_copy(p.pidfd, h.timed.fd);
  if (t.fd_copy >= 0) {
    // From the page cache here at once (no thread to wake: a few microseconds);
    // what would wait for a disk, by a worker.
    SvTimedOutcome o = sv_timed_make(t, scratch_, true);
    if (o == SvTimedOutcome::Made) {
      sv_timed_deliver(t, scratch_, false);  // the loop's thread: no notification is received meanwhile
      return complete(t);
    }
    if (o == SvTimedOutcome::Blocks && pool_.submit(t)) return;
    ::close(t.fd_copy);
  } else if (!said_untimed_) {
    said_untimed_ = true;
    sv_say(fmt::format("bonsaictl supervisor ({}): cannot copy a descriptor of pid {} (pidfd_getfd refused: Yama, "
                       "another user's process): its protected reads go untimed (docs/reference/protect.md)\n",
                       seg_.service(), h.tgid));
  }
  continue_read(th, h.call, h.bucket, h.asked, h.timed_reserve, lim_.view().seq, h.lfd, h.id);
}

void SvTimedReads::finish() {
  std::vector<SvTimedRead> done;
  pool_.done(done);
  for (SvTimedRead& t : done) complete(t);
}

void SvTimedReads::stop() {
  pool_.stop();
  finish();
}

void SvTimedReads::complete(SvTimedRead& t) {
  {
    Proc* p = ledger_.proc_find(t.tgid);
    Thread* th = ledger_.thread_find(t.tid);
    bool listening = false;  // an ended tree's listener is closed (its number may be another's now)
    for (const Listener& l : trees_.listeners()) listening = listening || l.fd == t.lfd;
    if (!t.made) {
      if (t.fd_copy >= 0) ::close(t.fd_copy);
      // Interrupted meanwhile, the call restarts as a new notification, which may have
      // come already: this one's reservation is given back, the thread's state left alone.
      bool valid = listening && seccomp_notify_id_valid(t.lfd, t.id) == 0;
      if (valid && th && p) return continue_read(*th, t.call, t.bucket, t.asked, t.reserved, t.view_seq, t.lfd, t.id);
      if (th && p) {
        Owed o{true, SvMoved::ReadChar, t.call, {t.bucket[0], t.bucket[1]}, t.asked, t.reserved, t.view_seq, 0};
        ledger_.settle_moved(*th, *p, o, 0);
      }
      if (valid) sv_respond(t.lfd, t.id);
      return;
    }
    bool answered = t.answered > 0;
    if (t.fd_copy >= 0) ::close(t.fd_copy);
    if (answered) {
      ++timed_;
      if (!lim_.lost()) protect_hist_add(&seg_.seg().protect, t.ns);
    }
    if (th) th->timed_lost = answered ? 0 : static_cast<uint8_t>(std::min(th->timed_lost + 1, 255));
    if (th && p) {
      Owed o{true, SvMoved::ReadChar, t.call, {t.bucket[0], t.bucket[1]}, t.asked, t.reserved, t.view_seq, 0};
      ledger_.settle_moved(*th, *p, o, answered && t.r > 0 ? static_cast<uint64_t>(t.r) : 0);
    }
  }
}

}  // namespace bonsai::ctl
