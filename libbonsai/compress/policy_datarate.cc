// SPDX-License-Identifier: MIT
// Hovestadt et al. Algorithm 1 (see policy_datarate.h). Line numbers below refer to
// the paper's listing.
#include "compress/policy_datarate.h"

namespace bonsai::compress {

void datarate_init(DatarateState& s, uint8_t nlevels, uint8_t start) noexcept {
  s = DatarateState{};
  s.nlevels = nlevels ? nlevels : 1;
  s.ccl = start < s.nlevels ? start : 0;
  s.inc = true;
}

namespace {
// Moves one level in direction `up`, turning round at either end.
int step(const DatarateState& s, bool up) {
  int l = s.ccl + (up ? 1 : -1);
  if (l >= s.nlevels) l = s.nlevels >= 2 ? s.nlevels - 2 : 0;
  if (l < 0) l = s.nlevels >= 2 ? 1 : 0;
  return l;
}
}  // namespace

uint8_t datarate_next(DatarateState& s, double cdr, double alpha) noexcept {
  if (!s.have_pdr) {  // first call: pdr = cdr
    s.pdr = cdr;
    s.have_pdr = true;
  }
  double d = cdr - s.pdr;  // 1
  s.c += 1;                // 2
  int ncl = s.ccl;         // 3
  double tol = alpha * s.pdr;
  if (d <= tol && -d <= tol) {  // 4: stable
    uint32_t backoff = s.bck[s.ccl] >= 31 ? 0x80000000u : 1u << s.bck[s.ccl];
    if (s.c >= backoff) {  // 6: back-off over, probe a neighbour
      ncl = step(s, s.inc);
      s.c = 0;
    }
  } else if (d > 0) {  // 15: improved
    if (s.bck[s.ccl] < 30) s.bck[s.ccl] += 1;
    s.c = 0;
  } else {  // 19: dropped: revert the last change
    s.bck[s.ccl] = 0;
    ncl = step(s, !s.inc);
    s.c = 0;
  }
  if (ncl != s.ccl) s.inc = ncl > s.ccl;
  s.pdr = cdr;
  s.ccl = static_cast<uint8_t>(ncl);
  return s.ccl;
}

}  // namespace bonsai::compress
