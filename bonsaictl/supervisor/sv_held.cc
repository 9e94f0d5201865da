// SPDX-License-Identifier: MIT
// The supervisor's held calls (sv_held.h).
#include "supervisor/sv_held.h"

#include <seccomp.h>
#include <unistd.h>

#include <algorithm>

namespace bonsai::ctl {

void SvHeldQueue::hold(const Held& h, Proc& p) {
  ++deferred_;
  if (p.slot) slot_wait_enter(p.slot);
  held_.push_back(h);
}

void SvHeldQueue::release(Held& h, uint64_t now, SvLedger& ledger, SvHeldGo& go) {
  Proc* p = ledger.proc_find(h.tgid);
  if (p && p->slot) {
    slot_wait_leave(p->slot);
    auto c = static_cast<size_t>(h.call);
    if (h.call != CallId::count_ && !h.paced) {  // a paced call's wait is counted in held_ns
      uint64_t waited = now > h.since ? now - h.since : 1;
      p->slot->counters.throttled[c].fetch_add(1, std::memory_order_relaxed);
      p->slot->counters.wait_ns[c].fetch_add(waited, std::memory_order_relaxed);
      wait_hist_add(&ledger.shm().wait_hist, h.call, waited);  // p->slot is null once the segment is lost
    }
  }
  if (h.wait_fd >= 0) ::close(h.wait_fd);
  h.wait_fd = -1;
  if (h.emu.nr >= 0 && !h.paced && emu_held_) --emu_held_;
  go.held_go(h, p, now);
}

// Calls whose debt is paid, or whose socket has data, go.
void SvHeldQueue::release_due(uint64_t now, SvLedger& ledger, SvHeldGo& goer) {
  ledger.pay_orphans_due(now);
  for (size_t i = 0; i < held_.size();) {
    Held& h = held_[i];
    bool go = h.deadline && now >= h.deadline;
    if (go && !h.paced) {  // paid down: unless this thread still owes its buckets a piece
      Proc* p = ledger.proc_find(h.tgid);
      Thread* th = ledger.thread_find(h.tid);
      if (p && th) {
        h.deadline = ledger.hold_until(*th, *p, h.bucket, now);
        go = !h.deadline;
      }
    }
    if (!go && h.wait_fd >= 0) {
      pollfd one{h.wait_fd, POLLIN, 0};
      if (::poll(&one, 1, 0) > 0) {  // data (or EOF, an error): charge what is there
        Proc* p = ledger.proc_find(h.tgid);
        Thread* th = ledger.thread_find(h.tid);
        long q = sv_bytes_queued(h.wait_fd);
        uint64_t est = q > 0 ? std::min<uint64_t>(h.asked, static_cast<uint64_t>(q)) : 0;
        ::close(h.wait_fd);
        h.wait_fd = -1;
        if (p && th) {
          ledger.charge(*th, h.bucket[0], est);
          ledger.charge(*th, h.bucket[1], est);
          ledger.count(*p, h.call, 0, est);
          h.deadline = ledger.hold_until(*th, *p, h.bucket, now);
        }
        go = !h.deadline;
      } else if (seccomp_notify_id_valid(h.lfd, h.id) != 0) {  // interrupted or killed
        ::close(h.wait_fd);
        h.wait_fd = -1;
        Proc* p = ledger.proc_find(h.tgid);
        if (p && p->slot) slot_wait_leave(p->slot);
        held_[i] = held_.back();
        held_.pop_back();
        continue;
      }
    }
    if (go) {
      release(h, now, ledger, goer);
      held_[i] = held_.back();
      held_.pop_back();
      continue;
    }
    ++i;
  }
}

uint64_t SvHeldQueue::timeout(uint64_t now, uint64_t orphan_wake, std::vector<pollfd>& fds) const {
  uint64_t wake = orphan_wake;
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

void SvHeldQueue::drop_listener(int lfd, SvLedger& ledger) {
  for (size_t k = 0; k < held_.size();) {
    Held& h = held_[k];
    if (h.lfd != lfd) {
      ++k;
      continue;
    }
    if (h.wait_fd >= 0) ::close(h.wait_fd);
    if (h.emu.nr >= 0 && !h.paced && emu_held_) --emu_held_;
    sv_emu_close(h.emu);
    Proc* p = ledger.proc_find(h.tgid);
    if (p && p->slot) slot_wait_leave(p->slot);
    held_[k] = held_.back();
    held_.pop_back();
  }
}

void SvHeldQueue::follow(const uint8_t to[kMaxRules], uint64_t now, SvLedger& ledger) {
  auto renumber = [&](uint8_t b) { return b < kMaxRules ? to[b] : kNoBucket; };
  for (Held& h : held_) {
    for (uint8_t& b : h.bucket) b = renumber(b);
    if (h.paced) {  // its place was taken in the old clock: kept (a removed rule lets it go)
      if (h.bucket[0] == kNoBucket && h.bucket[1] == kNoBucket) h.deadline = now;
      continue;
    }
    if (!h.deadline) continue;  // a receive waiting for data: charged when it comes
    Proc* p = ledger.proc_find(h.tgid);
    Thread* th = ledger.thread_find(h.tid);
    h.deadline = !p || !th ? now : ledger.hold_until(*th, *p, h.bucket, now);
    if (!h.deadline) h.deadline = now;  // goes at the loop's next pass
  }
}

void SvHeldQueue::clear() {
  for (auto& h : held_) {
    if (h.wait_fd >= 0) ::close(h.wait_fd);
    sv_emu_close(h.emu);
  }
  held_.clear();
}

}  // namespace bonsai::ctl
