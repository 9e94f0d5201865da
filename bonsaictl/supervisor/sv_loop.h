// SPDX-License-Identifier: MIT
// The supervisor's loop (supervisor.h is its entry point): a small coordinator that owns
// the parts and wires them -- the view of the limits (sv_view.h), the ledger of threads
// and processes with charge and pay (sv_ledger.h), the held calls (sv_held.h), the paced
// writes (sv_pace.h), the protected reads (sv_timed.h), the trees and the join server
// (sv_serve.h), the notification handler (sv_handle.h) -- and runs one thread, one poll:
// the listeners, the join socket and its joiners, the sockets of receives waiting for
// data, the workers' reads, and the earliest deadline of a held call or orphaned debt.
#pragma once
#include <cstdint>
#include <vector>

#include "segment/shm_client.h"
#include "supervisor/supervisor.h"
#include "supervisor/sv_handle.h"
#include "supervisor/sv_held.h"
#include "supervisor/sv_ledger.h"
#include "supervisor/sv_pace.h"
#include "supervisor/sv_serve.h"
#include "supervisor/sv_timed.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

class SvLoop final : private SvViewFollower {
 public:
  SvLoop(int fd, Segment& seg, std::vector<int> notified, bool strict, SvServe serve = {});
  SupervisorStats run();

 private:
  void view_lost() override;
  void view_changed(const LimitsView& prev, const uint8_t to[kMaxRules], uint64_t seq, uint64_t now) override;
  // A tree ended: its held calls dropped, its listener closed.
  void listener_drop(size_t i);

  int first_fd_;  // the listener the supervisor was started for
  Segment& seg_;
  SupervisorStats stats_;
  SvLimits lim_;
  SvLedger ledger_;
  SvHeldQueue held_;
  SvJoinServer trees_;
  SvTimedReads timed_;
  SvPacer pacer_;
  SvHandler handler_;
  uint64_t last_sweep_ = 0;
};

}  // namespace bonsai::ctl
