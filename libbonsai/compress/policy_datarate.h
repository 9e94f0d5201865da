// SPDX-License-Identifier: MIT
// The `datarate` policy: Hovestadt et al., Algorithm 1, started and guided by a cost
// model. Every period, compare the application data rate with the previous period's;
// keep the level while it is stable within alpha, probe a neighbour after an
// exponential back-off, revert at once when a probe delivers less. Pure.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_datarate_state.h"
#include "compress/policy_model.h"

namespace bonsai::compress {

inline constexpr uint8_t kMaxBackoff = 6;    // probes at least every 2^6 periods
inline constexpr uint8_t kGateBackoff = 4;   // the model may veto probes below this back-off
inline constexpr double kTieMargin = 0.02;   // a dearer level must be 2% better to be kept
// A change between two levels in `DatarateState::fresh` starts a new codec frame (zstd:
// no history for a while, a lower ratio over it), so its short probe reads low: within
// this further margin the model (trusted at both levels) decides.
// why: see docs/notes/compression-measured.md#the-datarate-policys-margins
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
// why: see docs/notes/compression-measured.md#the-datarate-policys-margins
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
// why: see docs/notes/compression-measured.md#the-datarate-policys-margins
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
