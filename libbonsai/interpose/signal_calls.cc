// SPDX-License-Identifier: MIT
// sigaction() and signal() for SIGBUS: once a segment is mapped, the library's SIGBUS
// guard (shm/shm_guard.h) must stay the installed handler, or a truncated segment kills
// a process that installed a SIGBUS handler of its own after start-up (JVMs, databases,
// anything that maps files). The application's handler is kept as the guard's chained
// handler instead: it still receives every SIGBUS that is not a fault in a segment, and
// reading the disposition back returns what the application set. Every other signal,
// and SIGBUS before the guard exists, goes straight to glibc.
#include <cerrno>
#include <csignal>

#include "interpose/real.h"
#include "shm/shm_guard.h"

// Not in TSan builds: the TSan runtime calls sigaction() while it initialises, and an
// instrumented wrapper then crashes inside it (the guard still works; only a handler
// installed later by the application replaces it there).
#if !defined(__SANITIZE_THREAD__)
extern "C" {
#pragma GCC visibility push(default)

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  struct sigaction current;
  if (sig == SIGBUS && bonsai::shm_guard_chained(&current)) {
    if (act) bonsai::shm_guard_set_chained(*act);
    if (old) *old = current;
    return 0;
  }
  return bonsai::real::sigaction(sig, act, old);
}

// glibc's signal(): BSD semantics (the signal is blocked in its handler, calls restart).
sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction current;
  if (sig != SIGBUS || !bonsai::shm_guard_chained(&current)) return bonsai::real::signal(sig, handler);
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  struct sigaction next {};
  next.sa_handler = handler;
  sigemptyset(&next.sa_mask);
  sigaddset(&next.sa_mask, sig);
  next.sa_flags = SA_RESTART;
  bonsai::shm_guard_set_chained(next);
  // An SA_SIGINFO handler comes back as its address, as glibc's signal() returns it.
  if (current.sa_flags & SA_SIGINFO) return reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(current.sa_sigaction));
  return current.sa_handler;
}

#pragma GCC visibility pop
}  // extern "C"
#endif
