// SPDX-License-Identifier: MIT
// The protect controller's arithmetic (docs/reference/protect.md), pure: the p99 of one
// period from two histogram snapshots, the decision against the target, and the step
// that moves a squeezed rule's rate between its floor and its configured rate. No clock,
// no syscalls, no allocation.
#pragma once
#include <cstdint>

#include "abi/protect_hist.h"

namespace bonsai {

// What the controller did in a period (ShmProtect::decision; `stat` names them).
// Wait: the p99 is above the target but not by much and the evidence is thin (the
// calls since the last decrease): nothing moves until more calls confirm it.
enum class ProtectDecision : uint32_t { None = 0, Decrease = 1, Increase = 2, Hold = 3, Idle = 4, Wait = 5 };
const char* protect_decision_name(uint32_t d) noexcept;

// The quantile q (0 < q < 1) of the calls counted between `before` and `now`
// (kProtectBuckets counters each), interpolated within its bucket; 0 if none.
// `samples` gets the number of calls in the period. A counter that went backwards
// (a segment rewritten) counts 0.
uint64_t protect_quantile(const uint64_t* before, const uint64_t* now, double q, uint64_t& samples) noexcept;

// Tuning of the step (docs/reference/protect.md says why these values).
struct ProtectTuning {
  uint64_t min_samples = 20;       // fewer calls: the protected service is idle
  double beta = 0.8;               // a decrease takes beta x (p99 - target) / p99 off (Swift, Timely)
  double max_decrease = 0.5;       // and at most this fraction
  double severe = 1.5;             // p99 above severe x target: decrease at once, whatever the evidence
  uint64_t decrease_samples = 200; // otherwise a decrease needs this many calls since the last one
  uint32_t decrease_periods = 4;   // or this many periods (a slow caller): then it acts on what it has
  double increase = 0.04;          // additive increase per period: this fraction of the operating point
  uint32_t hai_after = 4;          // after this many increases in a row (a second well within the target)
  double hai_factor = 3.0;         // the step is this many times larger (Timely's hyperactive increase)
  double idle_grow = 2.0;          // idle protected service: the rate doubles per period (slow start)
  double idle_add = 0.01;          // plus this fraction of (rate - floor)
  double hold_below = 0.8;         // p99 in (hold_below x target, target]: hold (no sawtooth into the target)
  double fast_quantile = 0.9;      // between decisions: this quantile above the target decreases at once
  uint32_t fast_checks = 5;        // checks per period (the agent's)
};

// One period's decision for the observation (p99 over `samples` calls, gathered over
// `periods` periods since the last decrease) against `target_ns`.
ProtectDecision protect_decide(uint64_t p99_ns, uint64_t samples, uint64_t target_ns, const ProtectTuning& t = {},
                               uint32_t periods = UINT32_MAX) noexcept;

// True when the p99 is above severe x target: a decrease at once, on any evidence (the
// agent also checks it between decisions, on the calls since the last one).
bool protect_severe(uint64_t p99_ns, uint64_t target_ns, const ProtectTuning& t = {}) noexcept;

// Between decisions: true when `q_ns`, the fast_quantile (p90) of the `samples` calls
// since the last decision, is above the target with at least min_samples calls: a tenth
// of the calls slow is a severe overshoot that the third slowest of 25 calls already
// shows, where their p99 (the slowest) would be noise. The agent then decreases at once.
bool protect_fast(uint64_t q_ns, uint64_t samples, uint64_t target_ns, const ProtectTuning& t = {}) noexcept;

// The factor a decrease multiplies by: 1 - beta x (p99 - target) / p99, not below
// 1 - max_decrease (Swift's multiplicative decrease, proportional to the overshoot).
double protect_decrease_factor(uint64_t p99_ns, uint64_t target_ns, const ProtectTuning& t = {}) noexcept;

// A squeezed rule as the controller moves it. `base`: the rate the last decrease started
// from (where the target was missed), the scale of the additive increase; 0 before any.
struct ProtectRule {
  uint64_t current = 0, floor = 0, rate = 0, base = 0;
  uint32_t ups = 0;  // increases in a row
};

// Moves `r.current` after `d` (clamped into [floor, rate]; returns it). Decrease: the
// lesser of the cap and `used` (what the rule moved over the period, units/s; 0 unknown)
// times protect_decrease_factor (a 4GB/s cap on a 1 GB/s disk bites in one period), and
// remembers it as `base`; Increase: + increase x max(base, current), hai_factor times
// that after hai_after increases in a row; Idle: x idle_grow +
// idle_add x (rate - floor): from any floor back to the rate within ~log2(rate/floor)
// periods; Hold, Wait: unchanged.
uint64_t protect_step(ProtectRule& r, ProtectDecision d, uint64_t p99_ns, uint64_t target_ns, uint64_t used = 0,
                      const ProtectTuning& t = {}) noexcept;

}  // namespace bonsai
