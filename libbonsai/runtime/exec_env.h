// SPDX-License-Identifier: MIT
// What a service process hands down to the programs it executes:
// the library in LD_PRELOAD, the BONSAI_* settings the process was started with
// (captured once at set-up: a process may clear or rewrite its own environment
// later), and the service segment as an inherited descriptor (BONSAI_SHM_FD) so a
// child that changed uid finds it without a lookup by name.
//
// Everything called from the exec/spawn wrappers is async-signal-safe and
// allocation-free: it runs after vfork() and in children of threaded processes.
// Nothing here writes global state after set-up, so a vfork()ed child cannot
// disturb its parent.
#pragma once
#include <cstddef>

namespace bonsai {

// BONSAI_LEAVE=1 (any value but "" and "0"): the deliberate way out. The library
// does nothing in such a process, and hands nothing down.
bool exec_env_leaving(const char* leave_value) noexcept;

// Captures LD_PRELOAD's library path and the BONSAI_* settings of the start-up
// environment into static memory. Called once from set-up.
void exec_env_capture() noexcept;

// The value of a BONSAI_* setting captured at set-up (`name_eq`: "BONSAI_CTL="), or
// nullptr. The service this process is in: exec_env_kept("BONSAI_SERVICE=").
const char* exec_env_kept(const char* name_eq) noexcept;

// The environment for a new image: `envp` itself when it already carries
// everything (the usual case: a quick scan), else an array built in `buf` (or in
// memory mapped for it when `buf` is too small: `*mapped`/`*mapped_len` are then
// set and the caller unmaps after a failed exec). @return the array to pass, or
// `envp` unchanged if it could not be built (said once).
// `fd_out`: the segment descriptor to make inheritable (-1: none); `fd_opened`:
// true if it was opened for this call (close it if the exec fails).
struct ExecPlan {
  char* const* envp;
  int fd;
  bool fd_opened;
  void* mapped;
  size_t mapped_len;
};
ExecPlan exec_plan(char* const* envp, char* buf, size_t cap) noexcept;

// Makes plan.fd inheritable (before the exec).
void exec_plan_arm(const ExecPlan& plan) noexcept;
// After a failed exec: close-on-exec again, close what was opened, unmap. errno kept.
void exec_plan_undo(const ExecPlan& plan) noexcept;

}  // namespace bonsai
