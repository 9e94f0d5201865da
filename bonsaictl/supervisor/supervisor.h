// SPDX-License-Identifier: MIT
// The supervisor of `bonsaictl run --supervise`: holds a seccomp user-notification
// listener for a launched tree (every process and thread that inherited its filter)
// and charges each notified system call to the service's buckets -- the very buckets,
// counters and limits of its shared-memory segment the library uses -- before it
// answers CONTINUE. It never sees a call's result: a call is charged at the thread's
// next notification by what its I/O counters say moved (rchar/wchar), or, for calls
// the kernel does not count there, by what it asked for, cut to what its source
// holds; a call whose size shows only afterwards reserves one chunk before it goes.
// The exception: zero-copy calls whose ends cannot wait, which it makes itself, cut
// to their reservation (sv_emulate.h). See docs/reference/supervised.md "Supervised programs".
#pragma once
#include <string>
#include <vector>

#include "segment/shm_client.h"

namespace bonsai::ctl {

struct SupervisorStats {
  uint64_t notifications = 0;
  uint64_t deferred = 0;
  uint64_t timed = 0;  // protected reads made and timed (sv_protect.h)
};

// A supervisor that serves the service's later static and Go children too (the
// trampoline's, sv_exec.h): they join it over `accept_fd` (abi/sv_join.h) instead of
// starting their own, and it ends kSvLingerNs after the last of its trees ended.
struct SvServe {
  int accept_fd = -1;          // the service's join socket, listening (-1: none)
  bool deny_io_uring = true;   // the filter handed to joining programs denies io_uring
  int dir_fd = -1;             // the rendezvous directory: the filter is published there
  std::string service;         // the socket's name in it
};
inline constexpr uint64_t kSvLingerNs = 3'000'000'000;

// Serves `notify_fd` until no task uses the filter any more. Processes get slots of
// `seg` marked supervised; they are released when the processes end. `notified`: the
// system calls the filter notifies (new limits on others are said to need a restart).
// `strict`: a `run --strict` tree, whose processes mostly run the library: their slots
// are shared with it and not marked supervised (each counts the calls handled here).
SupervisorStats supervise(int notify_fd, Segment& seg, const std::vector<int>& notified, bool strict = false,
                          SvServe serve = {});

}  // namespace bonsai::ctl
