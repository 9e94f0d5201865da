// SPDX-License-Identifier: MIT
// Changing the limits in force (limiter_install.cc): a new view written into the next
// slot of the ring (view_ring.h) under a new generation, the process's own buckets
// carried across (bucket/limits_carry.h), then published in g_limiter.view. Used by the
// set-up (BONSAI_LIMITS, a service's limits), a service's live change (the watch's
// refresh) and the fleet lease's fallback (fleet_lapse.h). Not on any call's path.
#pragma once

#include "abi/limits_abi.h"

namespace bonsai {

// Installs `set` as the limits in force (constructor or control plane).
// @return false if the set is invalid (the limits in force stay).
bool limiter_install(const LimitSet& set) noexcept;

// One installer at a time (installs build in shared scratch): @return false if another
// thread (or an interrupted one, in a signal handler) is installing; else true, and the
// caller calls limiter_install_end after its install.
bool limiter_install_begin() noexcept;
void limiter_install_end() noexcept;

// Removes every limit (accounting continues).
void limiter_uninstall() noexcept;

// Recomputes g_limiter.fast_view; call after changing view, counters or watch.
void limiter_update_fast_view() noexcept;

}  // namespace bonsai
