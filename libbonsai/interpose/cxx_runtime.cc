// SPDX-License-Identifier: MIT
// The one libstdc++ function the library's code refers to, defined here so that the
// link takes nothing from libstdc++.a (its exception runtime mallocs an
// emergency pool of ~73 KiB in a constructor of every process, and adds imports and
// relocations to each start-up). Only the library links this file: bonsaictl and the
// unit tests keep the real libstdc++. `make test-symbols` checks the library imports
// nothing of the C++ runtime.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "sys/raw_syscall.h"

namespace std {

// string_view::substr and the like, given a position past the end: a bug of ours.
// libstdc++ would throw std::out_of_range, which under -fno-exceptions terminates;
// this says why on stderr and aborts the same way.
[[noreturn]] void __throw_out_of_range_fmt(const char* fmt, ...) {
  char msg[256];
  int n = std::snprintf(msg, sizeof msg, "bonsai: internal error: out of range: ");
  va_list ap;
  va_start(ap, fmt);
  int m = std::vsnprintf(msg + n, sizeof msg - static_cast<size_t>(n) - 1, fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
  if (len > sizeof msg - 2) len = sizeof msg - 2;
  msg[len++] = '\n';
  bonsai::raw_syscall3(SYS_write, 2, reinterpret_cast<long>(msg), static_cast<long>(len));
  std::abort();
}

}  // namespace std
