// SPDX-License-Identifier: MIT
// The `datarate` policy's state, one per connection (embedded in PolicyState,
// compress/policy_row.h): the level, back-offs, the probe in progress and the periods
// it is judged on. The algorithm that moves it, and the constants its comments name:
// compress/policy_datarate.h. Data only.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_model.h"

namespace bonsai::compress {

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
  // why: see docs/notes/compression-measured.md#long-repeated-text-issue-53
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

}  // namespace bonsai::compress
