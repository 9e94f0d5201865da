// SPDX-License-Identifier: MIT
// Installing limits (see limiter_install.h): the ring's one writer (view_ring.h for the
// generation protocol its readers follow), serialised by limiter_install_begin (one
// installer per sequence, shm_limits_fetch; the constructor before that). Runs inside
// the host process: no allocation, no locks, no exceptions.
#include "runtime/limiter_install.h"

#include <atomic>

#include "bucket/limits_carry.h"
#include "runtime/host_clock.h"
#include "runtime/limiter_local.h"
#include "runtime/limiter_state.h"
#include "runtime/view_ring.h"
#include "sys/clock.h"
#include "sys/startup.h"
#include "sys/word_copy.h"

namespace bonsai {

constinit ViewRing g_ring{};

BONSAI_STARTUP bool limiter_install(const LimitSet& set) noexcept {
  static constinit LimitsView next{};  // installs are serialised (see g_ring)
  const LimitsView* prev = g_limiter.view.load(std::memory_order_acquire);
  // The process's first install (its set-up) is built in place, in the ring's first
  // slot, which no reader has seen: not staged in `next`, two .bss pages fewer written
  // at every start with limits.
  bool first = !prev && g_ring.next_view.load(std::memory_order_relaxed) == 0;
  LimitsView& staged = first ? g_ring.views[0] : next;
  // A rate-only update (the same rules) keeps the table: only the parameters change.
  if (prev && limits_same_rules(prev->set, set)) {
    words_load(&next, prev, sizeof next);
    next.set = set;
    for (uint32_t r = 0; r < next.set.count; ++r) next.params[r] = bucket_params(next.set.rules[r]);
  } else if (!limits_view_build(set, staged)) {
    return false;
  }
  size_t slot = g_ring.next_view.fetch_add(1, std::memory_order_relaxed) % kViewRing;
  LimitsView& v = g_ring.views[slot];
  uint64_t gen = g_ring.last_gen.fetch_add(2, std::memory_order_relaxed) + 2;
  if (&v != &staged) {
    next.gen = gen;
    __atomic_store_n(&v.gen, gen - 1, __ATOMIC_RELAXED);  // odd: being written (seen before the words)
    words_store(reinterpret_cast<char*>(&v) + sizeof v.gen, reinterpret_cast<const char*>(&next) + sizeof next.gen,
                sizeof v - sizeof v.gen);
  }
  __atomic_store_n(&v.gen, gen, __ATOMIC_RELEASE);
  // This process's own buckets keep their state (bucket/limits_carry.h); a service's
  // shared ones were carried by bonsaictl when it wrote the limits.
  if (prev && g_limiter.buckets == g_local_buckets) {
    static constinit LimitsView old{};
    uint64_t g = view_gen(prev);
    words_load(&old, prev, sizeof old);
    if (!(g & 1) && view_gen(prev) == g) buckets_carry(old, g_local_buckets, v, g_local_buckets, mono_ns() - limiter_clock_offset());
    else buckets_renumbered(g_local_buckets, kMaxRules);
  }
  g_limiter.view.store(&v, std::memory_order_release);
  limiter_update_fast_view();
  return true;
}

void limiter_uninstall() noexcept {
  g_limiter.view.store(nullptr, std::memory_order_release);
  limiter_update_fast_view();
}

BONSAI_STARTUP void limiter_update_fast_view() noexcept {
  // Read-only (.rodata): it is never written, and 5.8 KiB of it in .data spread the
  // pages every start writes (relocations, the constructor's globals, the loader's
  // zeroing of the page where .bss begins) over three pages instead of one.
  static constexpr LimitsView unlimited = [] {
    LimitsView v{};
    for (auto& row : v.table.bucket_of)
      for (auto& cell : row) cell = kNoBucket;
    return v;
  }();
  const LimitsView* fast = nullptr;
  if (g_limiter.state.load(std::memory_order_relaxed) != kUninit && !g_limiter.counters && !g_limiter.watch.seq.load(std::memory_order_relaxed)) {
    const LimitsView* v = g_limiter.view.load(std::memory_order_relaxed);
    if (!v) fast = &unlimited;
    else if (!v->table.fd_sensitive) fast = v;
  }
  g_limiter.fast_view.store(fast, std::memory_order_release);
}

namespace {
constinit std::atomic<bool> g_installing{false};
}  // namespace

bool limiter_install_begin() noexcept { return !g_installing.exchange(true, std::memory_order_acquire); }
void limiter_install_end() noexcept { g_installing.store(false, std::memory_order_release); }

}  // namespace bonsai
