// SPDX-License-Identifier: MIT
// Supervised mode's view of system calls (x86_64): which raw system call stands for
// which call name of the limit language, where its descriptor, size and source are
// among its arguments, and which of them a service's limits make worth a seccomp
// notification. Pure data and lookups.
#pragma once
#include <cstdint>
#include <vector>

#include "abi/calls.h"
#include "abi/limits_abi.h"

namespace bonsai::ctl {

// How the supervisor learns what a call moved (it never sees the return value).
enum class SvMoved : uint8_t {
  ReadChar,   // the kernel counts it in the thread's rchar (/proc/PID/task/TID/io)
  WriteChar,  // ... in wchar (sendfile and copy_file_range: in both; wchar is used)
  Asked,      // not counted there (socket message calls, splice, tee, vmsplice): the
              // size asked, cut to what the source holds when that can be seen
  Unit,       // a metadata call: one call, no bytes
};

enum class SvSize : uint8_t {
  None,    // no size (metadata)
  Arg,     // args[size_arg]
  Iov,     // an iovec array at args[size_arg - 1] with args[size_arg] entries
  Msg,     // a msghdr at args[size_arg]
  Mmsg,    // an mmsghdr array at args[size_arg - 1], args[size_arg] entries
};

struct SvSyscall {
  int nr;
  const char* name;
  CallId call;        // the call name it is charged under
  CallId alt;         // sendto/recvfrom without an address: send/recv (else count_)
  int8_t fd_arg;      // the descriptor charged (destination of zero-copy calls); -1 none
  int8_t src_fd_arg;  // zero-copy: the source descriptor; -1 none
  int8_t src_off_arg; // zero-copy: the source's offset pointer (pread when set); -1 none
  SvSize size;
  int8_t size_arg;
  SvMoved moved;
  bool is_write;
};

// @return the entry of system call `nr`, or nullptr if it is never supervised.
const SvSyscall* sv_syscall(int nr) noexcept;

// Every supervised system call (for tests and docs).
const std::vector<SvSyscall>& sv_syscalls();

// The call names a system call of `s` may be charged under (its own, its alternative,
// and for a zero-copy call the reads of its source).
CallMask sv_call_candidates(const SvSyscall& s) noexcept;

// The system calls the service's limits make worth a notification: those one of
// whose candidate names has a rule for some descriptor kind. Others run at full speed.
std::vector<int> sv_notified_syscalls(const LimitSet& set);

}  // namespace bonsai::ctl
