// SPDX-License-Identifier: MIT
// The seccomp filter a supervised tree runs under: NOTIFY for the system calls the
// service's limits name (sv_syscalls.h), in the 64-bit, 32-bit and x32 ABIs; ENOSYS for
// io_uring_setup when denied; everything else allowed. Strict mode: only
// calls whose first argument lacks the library's mark are notified, kernel AIO contexts
// of anyone but the library are refused, and a probe tells a nested run it is inside.
// Loading it and handing its listener over is the launch's (launch/sv_launch.h).
#pragma once
#include <cstdint>
#include <seccomp.h>
#include <string>
#include <sys/socket.h>
#include <vector>

namespace bonsai::ctl {

// The descriptor and flags of the one sendmsg() the filter lets through unnotified (the
// listener's hand-over): a combination no program sends with.
inline constexpr int kHandoffFd = 1017;
inline constexpr int kHandoffFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_CMSG_CLOEXEC;

// The filter for the system calls `nrs` (`deny_io_uring`: io_uring_setup answers ENOSYS;
// `strict_mark`, 0 for off: strict mode). @return the context, not loaded (the caller
// loads and releases it), or nullptr with `why` (one line).
scmp_filter_ctx sv_filter_build(const std::vector<int>& nrs, bool deny_io_uring, uint32_t strict_mark, std::string& why);

// The numbers (libseccomp's: native, or pseudo for a call x86_64 lacks) whose rules
// notify the x86_64 system call `nr64` in every ABI: `nr64` itself, which libseccomp
// translates by name to the 32-bit ABI (its direct and socketcall forms) and to x32,
// and the 32-bit forms that have names of their own (abi/syscall_table.h's i386
// columns: sendfile64 for sendfile, recvmmsg_time64 for recvmmsg), which no
// translation of the 64-bit name reaches (sendfile64 went unnotified).
std::vector<int> sv_filter_numbers(int nr64);

// Is this process inside a tree started with `run --strict`? The strict filter answers
// a probe no other filter answers (the environment may have been scrubbed). The kernel
// allows one listener per filter chain, so a supervisor cannot start inside one: `run`
// and the trampoline start none there, and the strict one charges everything.
bool sv_inside_strict() noexcept;

// A fresh strict mark (getrandom), valid by abi/strict_mark.h.
uint32_t sv_strict_mark_new();

}  // namespace bonsai::ctl
