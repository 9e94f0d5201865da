// SPDX-License-Identifier: MIT
// Direct system calls for the library's own I/O (logging, stats file), so that it
// never goes through its own interposed symbols or glibc cancellation points.
#pragma once
#include <sys/syscall.h>
#include <unistd.h>

namespace bonsai {

inline long raw_syscall3(long nr, long a, long b, long c) noexcept {
#if defined(__x86_64__)
  long ret;
  asm volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
#else
  long ret = ::syscall(nr, a, b, c);
  return ret < 0 ? -errno : ret;
#endif
}

inline long raw_syscall4(long nr, long a, long b, long c, long d) noexcept {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  asm volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
#else
  long ret = ::syscall(nr, a, b, c, d);
  return ret < 0 ? -errno : ret;
#endif
}

// Six arguments (strict mode's marked calls, interpose/strict_calls.cc). @return the
// kernel's answer: a result, or -errno.
inline long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f) noexcept {
#if defined(__x86_64__)
  long ret;
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
  return ret;
#else
  long ret = ::syscall(nr, a, b, c, d, e, f);
  return ret < 0 ? -errno : ret;
#endif
}

// getpid() without glibc's page of code: the constructor and the exit hooks run at
// every exec (sys/startup.h).
inline int raw_getpid() noexcept { return static_cast<int>(raw_syscall3(SYS_getpid, 0, 0, 0)); }

inline long raw_write(int fd, const void* buf, size_t n) noexcept {
  return raw_syscall3(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}

}  // namespace bonsai
