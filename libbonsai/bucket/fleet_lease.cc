// SPDX-License-Identifier: MIT
// Fleet lease arithmetic (see fleet_lease.h). Pure: safe in the library's slow path.
#include "bucket/fleet_lease.h"

#include "sys/div128.h"

namespace bonsai {

namespace {
// a * b / c without overflow for the sizes here (rates up to 2^40, periods up to 10 s).
uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c) noexcept {
  return c == 0 ? 0 : mul_div_sat(a, b, c);
}
}  // namespace

uint64_t fleet_fallback_rate(uint64_t cap, uint32_t live, uint32_t expected) noexcept {
  uint32_t n = live ? live : expected ? expected : 1;
  uint64_t r = cap / n;
  return r ? r : 1;
}

uint32_t fleet_fallback_set(const LimitSet& in, const std::atomic<uint64_t>* cap,
                            const std::atomic<uint64_t>* fallback, LimitSet& out) noexcept {
  out = in;
  uint32_t n = in.count < kMaxRules ? in.count : kMaxRules;
  uint32_t changed = 0;
  for (uint32_t r = 0; r < n; ++r) {
    uint64_t fb = fallback[r].load(std::memory_order_relaxed);
    uint64_t c = cap[r].load(std::memory_order_relaxed);
    if (fb == 0) continue;  // unknown: keep the grant in force
    if (c && fb > c) fb = c;
    if (out.rules[r].rate != fb || out.rules[r].rate_less_micro) ++changed;
    rule_set_rate(out.rules[r], fb);
  }
  return changed;
}

uint64_t fleet_grant_rate(uint64_t granted, uint64_t period_ns) noexcept {
  uint64_t r = mul_div(granted, 1'000'000'000ull, period_ns ? period_ns : 1);
  return r ? r : 1;
}

uint64_t fleet_min_want(uint64_t cap_period, uint32_t live) noexcept {
  uint64_t m = cap_period / ((live ? live : 1) * kFleetMinDivisor);
  return m ? m : 1;
}

uint64_t fleet_want(FleetDemand& d, const FleetWantIn& in) noexcept {
  auto used = static_cast<double>(in.used);
  // A short average (half-life one period): demand that moves is followed within two.
  d.avg = d.primed ? 0.5 * d.avg + 0.5 * used : used;
  d.primed = true;
  uint64_t want;
  if (in.granted && in.used * 100 >= in.granted * kFleetBusyPercent) {
    want = in.cap_period;
  } else {
    // Rising demand is averaged; demand that left is given back at once (the last
    // period's use when below the average), so the fleet's shares move within two periods.
    double base = used < d.avg ? used : d.avg;
    double w = base * static_cast<double>(kFleetHeadroomPercent) / 100.0 + static_cast<double>(in.backlog);
    want = w >= static_cast<double>(in.cap_period) ? in.cap_period : static_cast<uint64_t>(w);
  }
  if (want < in.min_want) want = in.min_want;
  if (want > in.cap_period) want = in.cap_period;
  return want;
}

uint64_t fleet_lapse_excess(uint64_t used, uint64_t fallback_rate, uint64_t lapse_ns) noexcept {
  uint64_t allowed = mul_div(fallback_rate, lapse_ns, 1'000'000'000ull);
  return used > allowed ? used - allowed : 0;
}

uint64_t fleet_repay_step(uint64_t owed, uint64_t owed_at_start) noexcept {
  if (owed == 0) return 0;
  uint64_t step = (owed_at_start + kFleetRepayPeriods - 1) / kFleetRepayPeriods;
  if (step == 0) step = 1;
  return step < owed ? step : owed;
}

}  // namespace bonsai
