// SPDX-License-Identifier: MIT
// open(2) / close(2) as raw system calls (see raw_open.h).
#include "sys/raw_open.h"

#include <cerrno>
#include <fcntl.h>

#include "sys/raw_syscall.h"

namespace bonsai {

long raw_open(const char* path, int flags, int mode) noexcept {
#ifdef SYS_open
  return raw_syscall3(SYS_open, reinterpret_cast<long>(path), flags, mode);
#else
  long r = ::syscall(SYS_openat, AT_FDCWD, path, flags, mode);
  return r < 0 ? -errno : r;
#endif
}

void raw_close(int fd) noexcept { raw_syscall3(SYS_close, fd, 0, 0); }

}  // namespace bonsai
