// SPDX-License-Identifier: MIT
// The fallback a process applies when its fleet lease runs out (see fleet_lapse.h).
#include "runtime/fleet_lapse.h"

#include "bucket/fleet_lease.h"
#include "log/blog.h"
#include "runtime/limiter_install.h"
#include "runtime/limiter_state.h"
#include "runtime/view_ring.h"
#include "sys/word_copy.h"
#include "sys/startup.h"

namespace bonsai {

constinit std::atomic<ShmFleet*> g_fleet{nullptr};
constinit std::atomic<bool> g_fleet_fallback{false};

BONSAI_STARTUP void fleet_lapse_attach(ShmFleet* fleet) noexcept { g_fleet.store(fleet, std::memory_order_relaxed); }

bool fleet_lapse_apply() noexcept {
  ShmFleet* f = g_fleet.load(std::memory_order_relaxed);
  if (!f || !limiter_install_begin()) return false;
  bool installed = false;
  if (!g_fleet_fallback.load(std::memory_order_relaxed)) {
    const LimitsView* v = g_limiter.view.load(std::memory_order_acquire);
    static constinit LimitSet current{}, fallback{};  // installs are serialised (limiter_install_begin)
    uint64_t g = v ? view_gen(v) : 1;
    if (v) words_load(&current, &v->set, sizeof current);
    if (v && !(g & 1) && view_gen(v) == g) {
      fleet_fallback_set(current, f->cap, f->fallback, fallback);
      installed = limiter_install(fallback);
    }
    // In force even when nothing was installed (no limits, or the rates already are the
    // fallback): the next renewal clears it.
    g_fleet_fallback.store(true, std::memory_order_relaxed);
    f->lib_fallbacks.fetch_add(1, std::memory_order_relaxed);
    BONSAI_LOG_ONCE(LogLevel::Warn,
                    "fleet lease ran out (the fleet agent or its store is away): running at the fallback rate "
                    "(the fleet cap / live hosts) until it is renewed");
  }
  limiter_install_end();
  return installed;
}

uint64_t fleet_lapse_wake(uint64_t deadline) noexcept {
  ShmFleet* f = g_fleet.load(std::memory_order_relaxed);
  if (!f || g_fleet_fallback.load(std::memory_order_relaxed)) return deadline;
  uint64_t exp = f->lease_expiry_ns.load(std::memory_order_acquire);
  return exp && exp < deadline ? exp : deadline;
}

}  // namespace bonsai
