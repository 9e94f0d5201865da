// SPDX-License-Identifier: MIT
// Starting a supervised program (`bonsaictl run --supervise`): the calling process,
// about to exec the command, forks the supervisor (detached: its own session, not a
// child of the command), installs the seccomp filter (supervisor/sv_filter.h) on itself,
// which notifies the system calls the service's limits name, hands the listener over and
// waits until the supervisor serves it. The command then inherits the filter, and so
// does everything it starts.
#pragma once
#include <string>

#include "abi/limits_abi.h"
#include "supervisor/sv_filter.h"  // sv_inside_strict, sv_strict_mark_new

namespace bonsai::ctl {

struct SvPlan {
  std::string service;
  LimitSet limits{};      // the limits in force at launch: they choose the calls notified
  bool deny_io_uring = true;
  int shm_fd = -1;        // the segment as a descriptor (a process that changed uid), else opened by name
  // Strict mode (0: off): a data call whose first argument carries this mark
  // in its upper half (abi/strict_mark.h: the library's) goes unnotified; io_uring is
  // denied, and kernel AIO contexts (io_setup) to all but the library.
  uint32_t strict_mark = 0;
  // The service's later static and Go children may join this supervisor (abi/sv_join.h:
  // the trampoline's supervisors, not run's nor strict ones).
  bool serve = false;
  // The segment's protect: calls at launch: the reads among them are notified, to be
  // made and timed by the supervisor (supervisor/sv_protect.h).
  CallMask protect = 0;
};

// Does the above. Throws CtlError(1) with one line saying why when the kernel or the
// environment refuses seccomp, or the supervisor cannot start: nothing is started then.
void sv_launch(const SvPlan& plan);

}  // namespace bonsai::ctl
