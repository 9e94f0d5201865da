// SPDX-License-Identifier: MIT
// The limiter's set-up (limiter_setup.cc): once per process, from its environment or its
// service's segment, run by the constructor or by the first wrapper called before it.
// A wrapper asks `limiter_active()` (one acquire load once set up) before it limits.
#pragma once

#include "runtime/limiter_state.h"

namespace bonsai {

// Runs the one-time setup if not done yet. Safe from any wrapper, including before
// our constructor ran and re-entered. @return true if the limiter is active.
bool limiter_init_once() noexcept;

// A service member maps its segment at its first limited call (shm/shm_attach.h): a
// thread that finds another one doing it waits until it is done (bounded).
void limiter_attach_wait() noexcept;
// Attaches now if this process has not yet (for what is recorded in its slot outside a
// limited call: a denied io_uring, a rule held without the host segment).
void limiter_attach_if_pending() noexcept;

inline bool limiter_active() noexcept {
  int s = g_limiter.state.load(std::memory_order_acquire);
  if (s == kActive) [[likely]] return true;
  if (s == kUninit) return limiter_init_once();
  return false;
}

}  // namespace bonsai
