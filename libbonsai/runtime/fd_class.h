// SPDX-License-Identifier: MIT
// The one descriptor classifier: what the library asks about a descriptor (its type,
// blocking mode, socket type, address family), one system call per question asked.
// Users: the fd-sensitive bucket lookup (fd_kind_of), how a large transfer is cut up
// (interpose/shape.cc), which sockets compression may frame (fd_is_inet_stream).
// Never on the fast path; errno preserved.
#pragma once
#include <sys/types.h>

#include "abi/limits_abi.h"

namespace bonsai {

enum FdAsk : unsigned {
  kAskMode = 1,      // fstat: st_mode
  kAskFlags = 2,     // fcntl(F_GETFL): O_NONBLOCK
  kAskSockType = 4,  // getsockopt(SO_TYPE) (with kAskMode: only if it is a socket)
  kAskFamily = 8,    // getsockname: the address family
};

struct FdFacts {
  mode_t mode = 0;           // 0: unknown
  bool nonblocking = false;
  int sock_type = 0;         // SOCK_STREAM, SOCK_DGRAM...; 0: unknown or not a socket
  int family = 0;            // AF_INET...; 0 (AF_UNSPEC): unknown
};

// Answers the questions in `ask` (FdAsk bits) about `fd`.
FdFacts fd_facts(int fd, unsigned ask) noexcept;

// Socket, Pipe or File (anything else, or unknown): one fstat.
FdKind fd_kind_of(int fd) noexcept;

// True for a SOCK_STREAM socket over IPv4 or IPv6 (TCP); then `*nonblocking` (if
// given) tells whether it is in O_NONBLOCK mode.
bool fd_is_inet_stream(int fd, bool* nonblocking) noexcept;

}  // namespace bonsai
