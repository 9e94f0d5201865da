// SPDX-License-Identifier: MIT
// The `datarate` policy: Hovestadt et al., Algorithm 1, started and guided by a cost
// model. Every period, compare the application data rate with the previous period's;
// keep the level while it is stable within alpha, probe a neighbour after an
// exponential back-off, revert at once when a probe delivers less. Pure.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_model.h"

namespace bonsai::compress {

inline constexpr uint8_t kMaxBackoff = 6;    // probes at least every 2^6 periods
inline constexpr uint8_t kGateBackoff = 4;   // the model may veto probes below this back-off
inline constexpr double kTieMargin = 0.02;   // a dearer level must be 2% better to be kept
// A change between two levels in `DatarateState::fresh` starts a new codec frame (zstd:
// no history for a while, a lower ratio over it), so its short probe reads low: within
// this further margin the model (trusted at both levels) decides.
// why: see docs/compression-measured.md#the-datarate-policys-margins
inline constexpr double kFreshMargin = 0.06;
inline constexpr double kDownGate = 0.05;    // a cheaper level predicted 5% worse is not probed
// A level measured below this share of its predicted rate shows the model wrong there
// (CPU taken by other processes, compression not hidden by the bucket): no veto.
inline constexpr double kModelTrust = 0.85;
// A period spent at least this share of its time waiting for the bucket had CPU to
// spare: the link, not compression, set its rate. Between two such periods the data
// decides (the ratio), not the rate: see DatarateState::bound.
inline constexpr double kHeadroomShare = 0.10;
// A cheaper level is probed (or picked) only if its link ceiling on the period's data
// is this much above what the current level moved (see below_ceiling).
inline constexpr double kCeilingMargin = 0.03;
// The model's pick, predicted CPU-bound, yields to a cheaper neighbour this close.
inline constexpr double kCpuPickMargin = 0.05;
// For that rule, the model's picks (after the first calibration round, and at the end of
// the first period) take the stream's ratio over the one-shot sample's (hist_gain) as at
// least this: a stream's history lifts its ratio as it grows, and the CPU must keep up
// with the link at the ratio to come, not the first 50 ms's.
// why: see docs/compression-measured.md#the-datarate-policys-margins
inline constexpr double kPickHistGain = 1.4;

// A level that keeps matches across the whole window (DatarateState::reach) is probed
// from below it after this many periods past the first, then after twice as many each
// time its probe loses, up to kReachWaitMax (~25 s at the default period).
inline constexpr uint16_t kReachWaitFirst = 3;
inline constexpr uint16_t kReachWaitGrowth = 4;
inline constexpr uint16_t kReachWaitMax = 128;
// A probe's two periods whose ratios differ by this factor beyond what the levels'
// ratios on the same calibration chunk predict saw the stream's history, not the
// chunk's: the model's same-data verdict cannot speak for them, the rates do.
inline constexpr double kHistoryShift = 1.3;

struct DatarateState {
  uint8_t ccl;      // current level index
  uint8_t nlevels;  // levels 0..nlevels-1
  bool inc;         // was the last change an increase?
  bool warm;        // past the first (calibrating) period
  bool dropped;     // the rate dropped at a steady level: the owner should resample the model
  int8_t probe_from;  // level left by the change just made; -1 if none
  bool first_pick;  // the change just made is the model's first pick (judged within alpha)
  uint32_t c;       // decisions since the last change
  uint8_t bck[kMaxLevels];
  uint8_t fresh;    // bit i: level i is one of those between which a change drops history
  double pdr;       // previous period's rate
  double before;    // rate of probe_from before the change
  // The period just ended waited for the bucket >= kHeadroomShare of its time (set by
  // the owner before datarate_next): the link, not compression, set its rate.
  bool bound;
  // The totals of the period just ended (set by the owner before datarate_next) and of
  // the period before a probe. A probe is judged on the same data: each period tells,
  // by the model, what the other level would have moved on its data
  // (model_rate_on), and the two verdicts are averaged, since two periods' rates differ
  // as much by the data they happened to carry, and by the new zstd frame's missing
  // history, as by the level.
  PeriodMeasure period;
  PeriodMeasure before_period;
  // The most application bytes/s the level above ccl can compress, measured on the
  // mix's promoted chunks within the last second (set by the owner); 0: not measured.
  double up_cpu_rate;
  // The cheapest level whose stream keeps matches across the whole window (set by the
  // owner: zstd_level_reaches_window); 0: none, or no cheaper compressing level. Levels
  // below it lose repeats MiBs back, which one-shot calibration cannot see (every level
  // samples alike there), so the model never sends a stream up to it: it is probed
  // directly, at growing intervals, and judged by the rates.
  // why: see docs/compression-measured.md#long-repeated-text-issue-53
  uint8_t reach;
  bool reach_probe;     // the change just made is such a probe
  uint16_t reach_c;     // periods below `reach` since the last reach probe
  uint16_t reach_wait;  // periods before the next
  // A reach probe's new zstd frame first takes in this many application bytes (the
  // window: repeats further back than what it holds cannot be found), or half a period,
  // unmeasured; then a brief period judges it. Set by the owner with `reach`.
  uint64_t reach_fill;
  uint64_t fill_left, fill_ns;  // of the probe in progress
};

void datarate_init(DatarateState& s, uint8_t nlevels, uint8_t start) noexcept;

// What the level list tells datarate (after datarate_init): which changes start a new
// zstd frame (`fresh`) and the level with the window's reach (`reach`, `reach_fill`).
void datarate_levels(DatarateState& s, const LevelList& levels) noexcept;

// Whether a change between levels `a` and `b` starts a new codec frame (both in
// `fresh`: two zstd levels), so the stream's history is lost at it.
inline bool datarate_new_frame(const DatarateState& s, unsigned a, unsigned b) noexcept {
  return a < 8 && b < 8 && (s.fresh >> a & 1) && (s.fresh >> b & 1);
}

// After the first calibration round, before the first period ends, when the link is
// known (the cap's rate, policy_capped_start): moves to the model's pick at once, as the
// end of the first period would (not a probe: that period then measures the picked
// level), which would otherwise run its whole first period at the middle level.
// why: see docs/compression-measured.md#the-datarate-policys-margins
// @return the level index (s.ccl).
uint8_t datarate_round_pick(DatarateState& s, const CostModel& m) noexcept;

// The link changed (a cap set live): back-offs and any probe in progress are dropped and
// the next period is judged as the first (it ends with the model's pick), at s.ccl.
void datarate_restart(DatarateState& s) noexcept;

// One decision: `cdr` is the application data rate measured at level s.ccl during
// the period just ended; `m` the cost model (already fed that period).
// @return the level index for the next period (also stored in s.ccl).
uint8_t datarate_next(DatarateState& s, double cdr, double alpha, const CostModel& m) noexcept;

}  // namespace bonsai::compress
