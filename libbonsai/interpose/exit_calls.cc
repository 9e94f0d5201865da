// SPDX-License-Identifier: MIT
// _exit() and _Exit() run no destructors, yet forked workers (fio's jobs, shells)
// end with them: run our exit hooks (stats line, service slot) first. A vfork()ed
// child shares its parent's memory and must not touch our state: process_exit_hooks
// skips any process whose pid is not the one recorded at set-up or after fork().
#include <unistd.h>

#include "interpose/real.h"
#include "interpose/process_exit.h"

extern "C" {
#pragma GCC visibility push(default)

[[noreturn]] void _exit(int status) {
  bonsai::process_exit_hooks();
  bonsai::real::_exit(status);
  __builtin_unreachable();
}

[[noreturn]] void _Exit(int status) {
  bonsai::process_exit_hooks();
  bonsai::real::_Exit(status);
  __builtin_unreachable();
}

#pragma GCC visibility pop
}  // extern "C"
