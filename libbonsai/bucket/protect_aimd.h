// SPDX-License-Identifier: MIT
// The protect controller's arithmetic (issue 52, docs/protect.md), pure: the p99 of one
// period from two histogram snapshots, and the AIMD step that moves a squeezed rule's
// rate between its floor and its configured rate. No clock, no syscalls, no allocation.
#pragma once
#include <cstdint>

#include "abi/protect_hist.h"

namespace bonsai {

// What the controller did in a period (ShmProtect::decision; `stat` names them).
enum class ProtectDecision : uint32_t { None = 0, Decrease = 1, Increase = 2, Hold = 3, Idle = 4 };
const char* protect_decision_name(uint32_t d) noexcept;

// The quantile q (0 < q < 1) of the calls counted between `before` and `now`
// (kProtectBuckets counters each), interpolated within its bucket; 0 if none.
// `samples` gets the number of calls in the period. A counter that went backwards
// (a segment rewritten) counts 0.
uint64_t protect_quantile(const uint64_t* before, const uint64_t* now, double q, uint64_t& samples) noexcept;

// Tuning of the step (docs/protect.md says why these values).
struct ProtectTuning {
  uint64_t min_samples = 20;   // fewer calls in a period: the protected service is idle
  double decrease = 0.5;       // multiplicative decrease when p99 > target
  double increase = 0.01;      // additive increase per period, a fraction of (rate - floor)
  double idle_grow = 2.0;      // idle protected service: the rate doubles per period (slow start)
  double hold_below = 0.8;     // p99 in (hold_below x target, target]: hold (no sawtooth into the target)
};

// One period's decision for the observation (p99, samples) against `target_ns`.
ProtectDecision protect_decide(uint64_t p99_ns, uint64_t samples, uint64_t target_ns,
                               const ProtectTuning& t = {}) noexcept;

// The next rate of a rule now at `current`, between `floor` and `rate` (the configured
// one), after `d`: Decrease x0.5, Increase + 1% of (rate - floor), Idle x2 (+ the same
// 1%): from any floor back to the configured rate within ~log2(rate/floor) periods.
// `used`: what the rule moved over the period, units/s (0: unknown or nothing): a decrease
// halves the lesser of it and `current`, so a cap far above what the device gives (4GB/s
// on a 1 GB/s disk) bites in one period instead of log2(cap / used) periods.
uint64_t protect_next_rate(uint64_t current, uint64_t floor, uint64_t rate, ProtectDecision d,
                           const ProtectTuning& t = {}, uint64_t used = 0) noexcept;

}  // namespace bonsai
