// SPDX-License-Identifier: MIT
// fstat and fstatat as the system calls themselves: glibc has exported them as functions
// only since 2.33 (before, inline wrappers of __fxstat), so the library makes the
// calls (the glibc build needs nothing newer than GLIBC_2.17). On x86_64 the
// kernel's struct stat is glibc's and musl's. errno untouched. @return 0 or -errno.
#pragma once
#include <sys/stat.h>
#include <sys/syscall.h>

#include "sys/raw_syscall.h"

namespace bonsai {

#if defined(__x86_64__)
static_assert(sizeof(struct stat) == 144, "struct stat is the kernel's on x86_64");
#endif

inline long raw_fstat(int fd, struct stat& st) noexcept {
  return raw_syscall3(SYS_fstat, fd, reinterpret_cast<long>(&st), 0);
}

inline long raw_fstatat(int dirfd, const char* path, struct stat& st, int flags) noexcept {
  return raw_syscall4(SYS_newfstatat, dirfd, reinterpret_cast<long>(path), reinterpret_cast<long>(&st), flags);
}

}  // namespace bonsai
