// SPDX-License-Identifier: MIT
// See protect_aimd.h. AIMD (Chiu and Jain 1989; TCP's congestion avoidance): halving on
// a violation backs off fast enough to bring the latency back within a few periods,
// and additive increase probes back slowly, so the squeezed converge to what the disk
// leaves over instead of oscillating between extremes. The hold band below the target
// keeps the probe from walking into the target every few periods. When the protected
// service is idle the rate doubles each period, as TCP's slow start restarts after an
// idle period: the squeezed get the disk back within seconds (work conserving), where
// an additive climb from the floor would take a hundred periods.
#include "bucket/protect_aimd.h"

#include <algorithm>

namespace bonsai {

const char* protect_decision_name(uint32_t d) noexcept {
  switch (static_cast<ProtectDecision>(d)) {
    case ProtectDecision::Decrease: return "decrease";
    case ProtectDecision::Increase: return "increase";
    case ProtectDecision::Hold: return "hold";
    case ProtectDecision::Idle: return "idle";
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

ProtectDecision protect_decide(uint64_t p99_ns, uint64_t samples, uint64_t target_ns,
                               const ProtectTuning& t) noexcept {
  // Too few calls to judge: idle, unless those few were slow (then nothing is given back
  // on thin evidence).
  if (samples < t.min_samples) return samples && p99_ns > target_ns ? ProtectDecision::Hold : ProtectDecision::Idle;
  if (p99_ns > target_ns) return ProtectDecision::Decrease;
  if (static_cast<double>(p99_ns) > t.hold_below * static_cast<double>(target_ns)) return ProtectDecision::Hold;
  return ProtectDecision::Increase;
}

uint64_t protect_next_rate(uint64_t current, uint64_t floor, uint64_t rate, ProtectDecision d,
                           const ProtectTuning& t, uint64_t used) noexcept {
  floor = std::min(floor, rate);
  current = std::clamp(current, floor, rate);
  if (d == ProtectDecision::Decrease && used > 0 && used < current) current = std::max(used, floor);
  double span = static_cast<double>(rate - floor);
  double next = static_cast<double>(current);
  switch (d) {
    case ProtectDecision::Decrease: next = next * t.decrease; break;
    case ProtectDecision::Increase: next += std::max(1.0, span * t.increase); break;
    case ProtectDecision::Idle: next = next * t.idle_grow + std::max(1.0, span * t.increase); break;
    case ProtectDecision::Hold:
    case ProtectDecision::None: break;
  }
  if (next >= static_cast<double>(rate)) return rate;
  if (next <= static_cast<double>(floor)) return floor;
  return static_cast<uint64_t>(next);
}

}  // namespace bonsai
