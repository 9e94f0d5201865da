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

// Copies /proc/PID/comm (without the newline) into `out` (NUL-terminated, <= cap-1).
void proc_comm(int pid, char* out, size_t cap) noexcept;

// A slot's identity check: is `pid` alive and still the process that started at `start_time`?
bool proc_is(int pid, uint64_t start_time) noexcept;

}  // namespace bonsai
