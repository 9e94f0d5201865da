// SPDX-License-Identifier: MIT
// The SIGBUS guard of mapped segments. A segment is a file anyone of its owner can
// truncate, remove or replace; touching a page past the new end of a truncated file
// raises SIGBUS, which would kill the host process. The guard's
// handler recognises faults whose address lies inside a registered mapping, maps
// anonymous zeroed memory over the whole mapping (the faulting instruction then
// completes on it) and marks the mapping lost; every other SIGBUS goes to the
// handler the application had before (SA_SIGINFO or plain), or, with none, gets
// its default action (the process dies with SIGBUS as it would without us).
// Used by the library and by bonsaictl (both map segments). Nothing here runs on a
// fast path: the cost is one sigaction at the first registration.
#pragma once
#include <csignal>
#include <cstddef>

namespace bonsai {

inline constexpr unsigned kGuardRegions = 8;

// Guards [addr, addr+len) from now on. Installs the handler at the first call.
// @return false if the table is full or the handler could not be installed (the
// mapping is then unguarded, as before). Async-signal-safe; no allocation.
bool shm_guard_register(void* addr, size_t len) noexcept;

// Stops guarding the mapping at `addr` (call before munmap). The handler stays.
void shm_guard_unregister(void* addr) noexcept;

// True once a SIGBUS inside the mapping at `addr` replaced it with zeroed memory:
// what it now holds is private to this process and no longer the segment.
bool shm_guard_lost(const void* addr) noexcept;

// The application's SIGBUS disposition as the guard will chain to it. The
// library's sigaction()/signal() wrappers use these so that a handler installed
// after ours is chained to instead of replacing the guard.
// @return true if the guard is installed (and `prev` was read or written).
bool shm_guard_chained(struct sigaction* prev_out) noexcept;
bool shm_guard_set_chained(const struct sigaction& next) noexcept;

// Tests: simulate the handler on an address (as if a SIGBUS hit it).
// @return true if it was inside a guarded mapping (which is now replaced).
bool shm_guard_handle_for_test(void* fault_addr) noexcept;

}  // namespace bonsai
