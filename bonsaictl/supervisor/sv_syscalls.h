// SPDX-License-Identifier: MIT
// Supervised mode's view of system calls (x86_64): which raw system call stands for
// which call name of the limit language, where its descriptor, size and source are
// among its arguments -- the rows of the one table the library reads too
// (abi/syscall_table.h) -- and which of them a service's limits make worth a seccomp
// notification.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "abi/calls.h"
#include "abi/limits_abi.h"
#include "abi/sv_join.h"  // kSvTimedCalls
#include "abi/syscall_table.h"

namespace bonsai::ctl {

using SvMoved = SysMoved;     // how the supervisor learns what a call moved
using SvSize = SysSize;       // where its size is
using SvSyscall = SyscallEntry;

// @return the entry of system call `nr`, or nullptr if it is never supervised.
inline const SvSyscall* sv_syscall(int nr) noexcept { return syscall_entry(nr); }

// Every supervised system call (for tests and docs).
inline std::span<const SvSyscall> sv_syscalls() noexcept { return syscall_table(); }

// The call names a system call of `s` may be charged under (its own, its alternative,
// and for a zero-copy call the reads of its source).
CallMask sv_call_candidates(const SvSyscall& s) noexcept;

// The system calls the service's limits make worth a notification: those one of
// whose candidate names has a rule for some descriptor kind; and those its `protect:`
// names (`protect`, a CallMask) that the supervisor times (sv_protect.h: the reads of
// read, pread, readv, preadv). Others run at full speed.
std::vector<int> sv_notified_syscalls(const LimitSet& set, CallMask protect = 0);

}  // namespace bonsai::ctl
