// SPDX-License-Identifier: MIT
// The supervisor's held calls: notifications not answered yet because their buckets'
// debt is not paid (until a deadline), because they are receives that would block
// (until their socket has data, then charged by what is there), or because their place
// in a bucket's queue is not due (paced writes, sv_pace.h). The queue owns them: it
// finds those due, counts each as throttled with the time it was held, and hands it to
// whoever makes or answers it (SvHeldGo); it drops those of a tree that ended and
// re-times them when the limits change.
#pragma once
#include <poll.h>

#include <cstdint>
#include <vector>

#include "abi/calls.h"
#include "abi/limits_abi.h"
#include "supervisor/sv_emulate.h"
#include "supervisor/sv_ledger.h"
#include "supervisor/sv_protect.h"

namespace bonsai::ctl {

inline constexpr int kValidCheckMs = 100;  // how often held receives check they are still wanted

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
  // A zero-copy call the supervisor makes itself when released (emu.nr >= 0), cut to
  // the `reserved` bytes it took from each byte bucket before it was held.
  SvEmu emu{};
  uint64_t reserved[2] = {0, 0};
  // A call on a descriptor that must not wait (sv_turn.h, sv_pace.h): its place in the
  // queue is taken; it goes at `deadline`, owing nothing more.
  bool paced = false;
  int lfd = -1;  // the listener it came from, answered there
  // A protected read the supervisor makes and times itself when released (timed.nr >= 0,
  // sv_protect.h): charged `timed_reserve` before it went, as of view `timed_seq`.
  SvTimedArgs timed{};
  uint64_t timed_reserve = 0;
  uint64_t timed_seq = 0;
};

// Who makes or answers a released call (`p`: its process, nullptr once gone).
class SvHeldGo {
 public:
  virtual void held_go(Held& h, Proc* p, uint64_t now) = 0;

 protected:
  ~SvHeldGo() = default;
};

class SvHeldQueue {
 public:
  void hold(const Held& h, Proc& p);
  // A held zero-copy call the supervisor will make itself (its reservations share the
  // bucket, sv_reserve_share).
  void emu_add() { ++emu_held_; }
  uint64_t emu_held() const { return emu_held_; }
  uint64_t deferred() const { return deferred_; }
  // Calls whose debt is paid, or whose socket has data, go (to `go`); the orphans'
  // debt is taken first.
  void release_due(uint64_t now, SvLedger& ledger, SvHeldGo& go);
  // How long the loop may sleep (ns), and the held receives' sockets to poll.
  uint64_t timeout(uint64_t now, uint64_t orphan_wake, std::vector<pollfd>& fds) const;
  // The calls held from the tree of listener `lfd`, which ended: their tasks are gone.
  void drop_listener(int lfd, SvLedger& ledger);
  // New limits (`to`: old bucket -> new): held calls re-timed at the new rates.
  void follow(const uint8_t to[kMaxRules], uint64_t now, SvLedger& ledger);
  // The end: nothing to answer, their copies closed.
  void clear();

 private:
  void release(Held& h, uint64_t now, SvLedger& ledger, SvHeldGo& go);
  std::vector<Held> held_;
  uint64_t emu_held_ = 0;  // held calls the supervisor will make itself (Held::emu)
  uint64_t deferred_ = 0;
};

}  // namespace bonsai::ctl
