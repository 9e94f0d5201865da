// SPDX-License-Identifier: MIT
// Which protect-agent serves a protected service (docs/reference/protect.md): its pid
// and its start time are in the service's segment (ShmProtect); a pid alone may have
// been reused by another process since the agent died, so the start time must match too.
#pragma once
#include <cstdint>
#include <sys/types.h>

namespace bonsai::ctl {

// The start time of `pid` (/proc/PID/stat field 22, clock ticks since boot); 0 if unknown.
uint64_t proc_start_ticks(pid_t pid) noexcept;

// Whether the agent that wrote (pid, start) into a segment still runs: the pid is alive,
// a process of the segments' user (ctl_uid) whose command line names protect-agent, and
// (unless `start` is 0, an agent of an earlier build) started at `start`. The pair is
// untrusted (a tenant can write any live pid there): anything else is no agent. Without
// /proc: the pid is alive.
bool protect_agent_alive(uint32_t pid, uint64_t start) noexcept;

}  // namespace bonsai::ctl
