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

// Pid namespaces (issue #47, docs/containers.md). The kernel numbers the initial one so.
inline constexpr uint32_t kInitPidNs = 0xEFFFFFFCu;

// The inode of this process's pid namespace (/proc/self/ns/pid), or 0 if unknown.
uint32_t proc_self_pidns() noexcept;

// The process that is pid `ns_pid` in pid namespace `ns` and started at `start_time`,
// as a pid of our own namespace: the /proc/PID whose ns/pid is `ns` and whose NSpid
// line ends in `ns_pid`. `ns_seen` is set when any process of `ns` is visible here (then
// a miss means the process is gone). A scan of /proc: bonsaictl's and reclaim's, never
// a fast path. @return the pid, or 0 if not found.
int proc_host_pid(uint32_t ns, int ns_pid, uint64_t start_time, bool& ns_seen) noexcept;

// A slot's process as seen from here (`self`: proc_self_pidns()): `slot_ns` its
// namespace (0: unknown, taken as ours). State of the answer: Alive with `pid` set to our pid for it; Dead (gone); or
// Unknown (another namespace we cannot see into: a container's process looking at the
// host's slots, a sibling container; never reclaimed, never signalled).
enum class SlotProc { Alive, Dead, Unknown };
SlotProc proc_of_slot(uint32_t self, uint32_t slot_ns, int slot_pid, uint64_t start_time, int& pid) noexcept;

}  // namespace bonsai
