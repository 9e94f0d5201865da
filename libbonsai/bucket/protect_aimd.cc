// SPDX-License-Identifier: MIT
// See protect_aimd.h and docs/reference/protect.md ("The control law, and why"). Additive increase,
// multiplicative decrease (Chiu and Jain 1989), with the decrease proportional to how far
// the p99 is above the target and limited to once per confirmed observation (Swift,
// Kumar et al. SIGCOMM 2020; Timely, Mittal et al. SIGCOMM 2015): a p99 barely over the
// target (noise, at ~125 calls a period) takes a few percent off instead of half. The
// additive step is scaled to the operating point (the rate the last decrease started
// from), not to the configured rate: a 4GB/s cap on a disk that leaves 200 MB/s would
// otherwise climb 40 MB/s a period and saw-tooth; after a second of increases in a row
// the step triples (Timely's hyperactive increase), so that a decrease caused by a
// neighbour's burst, not by the squeezed, is made up within seconds. The hold band below the target keeps
// the probe from walking into the target every few periods. When the protected service is
// idle the rate doubles each period, as TCP's slow start restarts after an idle period:
// the squeezed get the disk back within seconds (work conserving).
#include "bucket/protect_aimd.h"

#include <algorithm>

namespace bonsai {

const char* protect_decision_name(uint32_t d) noexcept {
  switch (static_cast<ProtectDecision>(d)) {
    case ProtectDecision::Decrease: return "decrease";
    case ProtectDecision::Increase: return "increase";
    case ProtectDecision::Hold: return "hold";
    case ProtectDecision::Idle: return "idle";
    case ProtectDecision::Wait: return "wait";
    case ProtectDecision::None: break;
  }
  return "none";
}

uint64_t protect_quantile(const uint64_t* before, const uint64_t* now, double q, uint64_t& samples) noexcept {
  uint64_t d[kProtectBuckets];
  uint64_t total = 0;
  for (unsigned k = 0; k < kProtectBuckets; ++k) {
    d[k] = now[k] >= before[k] ? now[k] - before[k] : 0;
    total += d[k];
  }
  samples = total;
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double rank = q * static_cast<double>(total);  // the call at this rank, counted from the fastest
  double seen = 0;
  for (unsigned k = 0; k < kProtectBuckets; ++k) {
    if (!d[k]) continue;
    if (seen + static_cast<double>(d[k]) >= rank) {
      double lo = static_cast<double>(protect_bucket_lo_ns(k));
      double hi = k + 1 < kProtectBuckets ? static_cast<double>(protect_bucket_lo_ns(k + 1)) : lo * 1.19;
      double frac = (rank - seen) / static_cast<double>(d[k]);
      return static_cast<uint64_t>(lo + (hi - lo) * std::clamp(frac, 0.0, 1.0));
    }
    seen += static_cast<double>(d[k]);
  }
  return protect_bucket_lo_ns(kProtectBuckets - 1);
}

ProtectDecision protect_decide(uint64_t p99_ns, uint64_t samples, uint64_t target_ns, const ProtectTuning& t,
                               uint32_t periods) noexcept {
  // Too few calls to judge: idle, unless those few were slow (then nothing is given back
  // on thin evidence).
  if (samples < t.min_samples) return samples && p99_ns > target_ns ? ProtectDecision::Hold : ProtectDecision::Idle;
  if (p99_ns > target_ns) {
    if (!protect_severe(p99_ns, target_ns, t) && samples < t.decrease_samples && periods < t.decrease_periods) return ProtectDecision::Wait;
    return ProtectDecision::Decrease;
  }
  if (static_cast<double>(p99_ns) > t.hold_below * static_cast<double>(target_ns)) return ProtectDecision::Hold;
  return ProtectDecision::Increase;
}

bool protect_severe(uint64_t p99_ns, uint64_t target_ns, const ProtectTuning& t) noexcept {
  return static_cast<double>(p99_ns) > t.severe * static_cast<double>(target_ns);
}

bool protect_fast(uint64_t q_ns, uint64_t samples, uint64_t target_ns, const ProtectTuning& t) noexcept {
  return samples >= t.min_samples && q_ns > target_ns;
}

double protect_decrease_factor(uint64_t p99_ns, uint64_t target_ns, const ProtectTuning& t) noexcept {
  if (p99_ns <= target_ns || p99_ns == 0) return 1.0;
  double over = static_cast<double>(p99_ns - target_ns) / static_cast<double>(p99_ns);
  return std::clamp(1.0 - t.beta * over, 1.0 - t.max_decrease, 1.0);
}

uint64_t protect_step(ProtectRule& r, ProtectDecision d, uint64_t p99_ns, uint64_t target_ns, uint64_t used,
                      const ProtectTuning& t) noexcept {
  uint64_t floor = std::min(r.floor, r.rate);
  uint64_t current = std::clamp(r.current, floor, r.rate);
  double next = static_cast<double>(current);
  switch (d) {
    case ProtectDecision::Decrease: {
      if (used > 0 && used < current) current = std::max(used, floor);
      r.base = current;
      next = static_cast<double>(current) * protect_decrease_factor(p99_ns, target_ns, t);
      // Whatever the factor, a decrease moves (a factor of ~1 from a p99 a hair over).
      if (next >= static_cast<double>(current) && current > floor) next = static_cast<double>(current - 1);
      break;
    }
    case ProtectDecision::Increase: {
      double step = t.increase * static_cast<double>(std::max(r.base, current));
      if (r.ups >= t.hai_after) step *= t.hai_factor;  // a second well within the target: probe faster
      next += std::max(1.0, step);
      break;
    }
    case ProtectDecision::Idle:
      next = next * t.idle_grow + std::max(1.0, t.idle_add * static_cast<double>(r.rate - floor));
      break;
    case ProtectDecision::Hold:
    case ProtectDecision::Wait:
    case ProtectDecision::None: break;
  }
  r.ups = d == ProtectDecision::Increase ? r.ups + 1 : 0;
  if (next >= static_cast<double>(r.rate)) r.current = r.rate;
  else if (next <= static_cast<double>(floor)) r.current = floor;
  else r.current = static_cast<uint64_t>(next);
  return r.current;
}

}  // namespace bonsai
