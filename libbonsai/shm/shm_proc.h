// SPDX-License-Identifier: MIT
// What the segment needs to know about a process, from /proc with raw system calls
// (safe in a constructor, in an atfork child handler, and never interposed):
// start time for slot identity (pid reuse) and the command name.
#pragma once
#include <cstddef>
#include <cstdint>

namespace bonsai {

enum class ProcStatus { Alive, Dead };

// Reads /proc/PID/stat. @return Alive with `start_time` (field 22, clock ticks
// after boot) set, or Dead if the process is gone or a zombie.
ProcStatus proc_status(int pid, uint64_t& start_time) noexcept;

// The same for the calling process, by /proc/self: right even where /proc is another pid
// namespace's (a process that unshared its pid namespace and forked: its pid 1 is not
// /proc/1). @return as proc_status.
ProcStatus proc_status_self(uint64_t& start_time) noexcept;

// Copies /proc/PID/comm (without the newline) into `out` (NUL-terminated, <= cap-1).
void proc_comm(int pid, char* out, size_t cap) noexcept;

// A slot's identity check: is `pid` alive and still the process that started at `start_time`?
bool proc_is(int pid, uint64_t start_time) noexcept;

// Pid namespaces (docs/reference/containers.md). The kernel numbers the initial one so.
inline constexpr uint32_t kInitPidNs = 0xEFFFFFFCu;

// The inode of this process's pid namespace (/proc/self/ns/pid), or 0 if unknown.
uint32_t proc_self_pidns() noexcept;

// The pid namespace of process `pid` of our /proc (the inode of /proc/PID/ns/pid), or 0
// if unknown (another user's process: the link is the owner's and root's to read).
uint32_t proc_pidns(int pid) noexcept;

// The "NSpid:" line of /proc/PID/status: the process's pid in each pid namespace from
// /proc's down to its own (the last). Fills up to `cap` of them into `out`.
// @return how many the line holds (> cap: the first cap were filled), 0 if unreadable.
unsigned proc_nspid(int pid, int* out, unsigned cap) noexcept;

// What a reader makes of the process a slot names (shm_slots.h SlotJudge): Alive with
// our pid for it; Dead, proved gone; Unknown (a namespace we cannot see into, or a
// process alive under another reading of the slot: never reclaimed, never named as ours).
enum class SlotProc { Alive, Dead, Unknown };

}  // namespace bonsai
