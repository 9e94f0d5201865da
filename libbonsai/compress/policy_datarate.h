// SPDX-License-Identifier: MIT
// The `datarate` policy: Hovestadt et al., Algorithm 1. Every period, compare the
// application data rate with the previous period's; keep the level while it is
// stable within alpha, probe a neighbour after an exponential back-off, revert at
// once on a drop. Pure: rates and levels in, level out.
#pragma once
#include <cstdint>

#include "compress/codec.h"

namespace bonsai::compress {

struct DatarateState {
  uint8_t ccl;      // current level index
  uint8_t nlevels;  // levels 0..nlevels-1
  bool inc;         // was the last change an increase?
  bool have_pdr;
  uint32_t c;       // decisions since the last change
  uint8_t bck[kMaxLevels];
  double pdr;       // previous period's rate
};

void datarate_init(DatarateState& s, uint8_t nlevels, uint8_t start) noexcept;

// One decision (Algorithm 1 plus the bookkeeping of `inc`): `cdr` is the
// application data rate measured at level s.ccl during the period just ended.
// @return the level index for the next period (also stored in s.ccl).
uint8_t datarate_next(DatarateState& s, double cdr, double alpha) noexcept;

}  // namespace bonsai::compress
