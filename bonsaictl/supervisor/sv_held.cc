// SPDX-License-Identifier: MIT
// The supervisor's held calls: a notification not answered yet because its buckets'
// debt is not paid (until a deadline), or because it is a receive that would block
// (until its socket has data, then charged by what is there). Released calls are
// counted as throttled, with the time they were held. A held zero-copy call the
// supervisor makes itself (sv_emulate.h) is made when it is released.
#include <seccomp.h>
#include <unistd.h>

#include <algorithm>

#include "supervisor/sv_loop.h"

namespace bonsai::ctl {

void Loop::hold(Held h, Proc& p) {
  ++stats_.deferred;
  if (h.lfd < 0) h.lfd = fd_;
  if (p.slot) slot_wait_enter(p.slot);
  held_.push_back(h);
}

void Loop::release(Held& h, Proc* p, uint64_t now) {
  fd_ = h.lfd;  // answered on the listener it came from
  if (!p) {
    auto it = procs_.find(h.tgid);
    p = it == procs_.end() ? nullptr : &it->second;
  }
  if (p && p->slot) {
    slot_wait_leave(p->slot);
    auto c = static_cast<size_t>(h.call);
    if (h.call != CallId::count_ && !h.paced) {  // a paced call's wait is counted in held_ns
      uint64_t waited = now > h.since ? now - h.since : 1;
      p->slot->counters.throttled[c].fetch_add(1, std::memory_order_relaxed);
      p->slot->counters.wait_ns[c].fetch_add(waited, std::memory_order_relaxed);
      wait_hist_add(&seg_.seg().wait_hist, h.call, waited);  // p->slot is null once the segment is lost
    }
  }
  if (h.wait_fd >= 0) ::close(h.wait_fd);
  h.wait_fd = -1;
  if (h.emu.nr >= 0) {
    if (!h.paced && emu_held_) --emu_held_;
    return emulate(h, now);
  }
  if (h.timed.nr >= 0) {
    auto tit = threads_.find(h.tid);
    if (p && tit != threads_.end()) return timed_go(h, tit->second, *p);
  }
  respond(h.id);
}

void Loop::emulate(Held& h, uint64_t now) {
  if (h.lfd >= 0) fd_ = h.lfd;
  auto pit = procs_.find(h.tgid);
  auto tit = threads_.find(h.tid);
  Proc* p = pit == procs_.end() ? nullptr : &pit->second;
  Thread* th = tit == threads_.end() ? nullptr : &tit->second;
  // Interrupted (a signal: the call restarts as a new notification) or killed: not made.
  bool valid = seccomp_notify_id_valid(fd_, h.id) == 0;
  int64_t r = valid ? sv_emu_perform(h.emu, h.tid) : 0;
  sv_emu_close(h.emu);
  h.emu.nr = -1;
  uint64_t moved = r > 0 ? static_cast<uint64_t>(r) : 0;
  if (th && p) {  // a gone thread's debt went with it: nothing to give back
    for (int i = 0; i < 2; ++i) {
      const BucketParams* bp = view_.params(h.bucket[i]);
      if (!bp || bp->per_call) continue;  // a call-rate bucket: the call is made (or was tried)
      SvSettle s = sv_settle(h.reserved[i], moved);  // an emulated call moves at most what it reserved
      if (!s.give_back) continue;
      // A paced call's units were taken directly, not owed: nothing of the thread's debt to forget.
      if (h.paced) bucket_give_back(state(*p, h.bucket[i]), *bp, s.give_back, now);
      else give_back(*th, *p, h.bucket[i], s.give_back, now);
    }
  }
  if (p) count(*p, h.call, 0, moved);
  if (valid) respond_value(h.id, r);
}

// Calls whose debt is paid, or whose socket has data, go.
void Loop::release_due(uint64_t now) {
  if (!orphans_.empty() && now >= orphan_wake_) orphan_wake_ = pay_orphans(now);
  for (size_t i = 0; i < held_.size();) {
    Held& h = held_[i];
    bool go = h.deadline && now >= h.deadline;
    if (go && !h.paced) {  // paid down: unless this thread still owes its buckets a piece
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
      } else if (seccomp_notify_id_valid(h.lfd, h.id) != 0) {  // interrupted or killed
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
}

uint64_t Loop::held_timeout(uint64_t now, std::vector<pollfd>& fds) const {
  uint64_t wake = orphans_.empty() ? 0 : orphan_wake_;
  bool waiting_fd = false;
  for (const Held& h : held_) {
    if (h.deadline && (!wake || h.deadline < wake)) wake = h.deadline;
    if (h.wait_fd >= 0) waiting_fd = true;
  }
  uint64_t timeout_ns = 500'000'000;
  if (wake) timeout_ns = std::min<uint64_t>(timeout_ns, wake > now ? wake - now : 0);
  if (waiting_fd) timeout_ns = std::min<uint64_t>(timeout_ns, kValidCheckMs * 1'000'000ull);
  for (const Held& h : held_)
    if (h.wait_fd >= 0) fds.push_back(pollfd{h.wait_fd, POLLIN, 0});
  return timeout_ns;
}

}  // namespace bonsai::ctl
