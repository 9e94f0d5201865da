// SPDX-License-Identifier: MIT
// The library's half of fleet caps: when the host's lease runs out (the
// agent killed, the store away) the process applies the fallback rates by itself,
// never unlimited and never blocked. Checked only where the clock is already read (a
// wait's slow path): the fast path is unchanged. Runs inside the host process: no
// allocation, no locks held across a wait, errno untouched.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/fleet_abi.h"

namespace bonsai {

extern constinit std::atomic<ShmFleet*> g_fleet;            // the service's block, or nullptr
extern constinit std::atomic<bool> g_fleet_fallback;        // the fallback is in force here

// Remembers the service's fleet block (at attach).
void fleet_lapse_attach(ShmFleet* fleet) noexcept;

// True when the lease ran out at host time `host_now` and the fallback is not in force
// yet. Cost: a load and a compare when there is no fleet block.
inline bool fleet_lapse_due(uint64_t host_now) noexcept {
  ShmFleet* f = g_fleet.load(std::memory_order_relaxed);
  if (!f) [[likely]] return false;
  uint64_t exp = f->lease_expiry_ns.load(std::memory_order_acquire);
  return exp && host_now >= exp && !g_fleet_fallback.load(std::memory_order_relaxed);
}

// Installs the fallback: the limits in force with each rate replaced by the segment's
// fallback rate (bucket/fleet_lease.h). @return true if new limits are in force (a
// sleeper re-times its wait); false if another installer was busy (looked at again on
// the next slow path) or nothing changed.
bool fleet_lapse_apply() noexcept __attribute__((noinline));

// When a wait until `deadline` (host clock) should wake to look at the lease: the
// lease's expiry if it comes first and the fallback is not in force, else `deadline`.
uint64_t fleet_lapse_wake(uint64_t deadline) noexcept;

// The segment's limits were installed again (the agent renewed the lease).
inline void fleet_lapse_cleared() noexcept { g_fleet_fallback.store(false, std::memory_order_relaxed); }

}  // namespace bonsai
