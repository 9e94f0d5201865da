// SPDX-License-Identifier: MIT
// The 32-bit x86 ABI under the supervisor (strict mode holds 32-bit programs
// too). A 32-bit program -- or `int $0x80` in a 64-bit one, which the kernel serves with
// the 32-bit table -- makes the same calls under other numbers and with 32-bit layouts.
// They are brought to the 64-bit table's form (sv_syscalls.h): the number looked up in
// the table's i386 columns (abi/syscall_table.h), socketcall's multiplexed calls
// unpacked from the caller's memory, sizes read from 32-bit iovec, msghdr and mmsghdr. What the call moved
// is learnt from the thread's I/O counters, as for 64-bit calls (they count both ABIs).
#pragma once
#include <linux/seccomp.h>

#include <cstdint>

#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {

inline constexpr uint32_t kAuditArchI386 = 0x40000003u;  // AUDIT_ARCH_I386
inline constexpr int kX32SyscallBit = 0x40000000;         // x32 calls: x86_64 numbers with this bit

// A 32-bit call in the 64-bit table's form: its entry and its arguments in that entry's order.
struct SvCompatCall {
  const SvSyscall* sc = nullptr;
  __u64 args[6] = {};
};

// `nr` and `args` of an AUDIT_ARCH_I386 notification of thread `tid`. @return false if it
// is no call of the table (or socketcall's arguments cannot be read).
bool sv_compat_call(int nr, const __u64 args[6], int tid, SvCompatCall& out);

// The bytes a 32-bit call asks to move, by its entry's size kind (UINT64_MAX: unknown).
uint64_t sv_compat_asked(const SvSyscall& sc, const __u64 args[6], int tid);

// The 32-bit number of the 64-bit system call `nr64` (its first i386 column), or -1.
int sv_compat_nr(int nr64) noexcept;

}  // namespace bonsai::ctl
