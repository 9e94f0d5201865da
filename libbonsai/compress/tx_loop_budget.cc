// SPDX-License-Identifier: MIT
// The event loop's compression budget (see tx_loop_budget.h).
#include "compress/tx_loop_budget.h"

namespace bonsai::compress {
namespace {
constinit thread_local LoopBudget t_loop{};
}  // namespace

LoopBudget* loop_budget_of_thread() noexcept { return &t_loop; }

double loop_budget_chunk_ns(const LoopBudget& b) noexcept { return b.chunk_ns > 0 ? b.chunk_ns : kLoopStartNs; }

bool loop_budget_note(LoopBudget& b, uint64_t now_ns, uint64_t cpu_ns, uint64_t cal_ns) noexcept {
  if (b.win_start_ns == 0 || now_ns < b.win_start_ns) {  // first chunk (or a clock gone back)
    b.win_start_ns = now_ns;
    b.win_cpu_ns = cpu_ns + cal_ns;
    b.win_cal_ns = cal_ns;
    return false;
  }
  b.win_cpu_ns += cpu_ns + cal_ns;
  b.win_cal_ns += cal_ns;
  uint64_t span = now_ns - b.win_start_ns;
  if (span < kLoopWindowNs) return false;
  // A window of an idle thread is long and its share low: the budget grows, as it should.
  // The share is smoothed over windows (weight 1/2): one window's share jumps with the
  // calibration runs and the few dear chunks it happened to hold.
  double now_share = static_cast<double>(b.win_cpu_ns) / static_cast<double>(span);
  double share = b.chunk_ns > 0 ? 0.5 * b.share + 0.5 * now_share : now_share;
  double now_cal = static_cast<double>(b.win_cal_ns) / static_cast<double>(span);
  b.cal_share = b.chunk_ns > 0 ? 0.5 * b.cal_share + 0.5 * now_cal : now_cal;
  double budget = loop_budget_chunk_ns(b);
  if (share > kLoopShare) {
    double f = kLoopShare / share;
    budget *= f < 0.5 ? 0.5 : f;
  } else if (share < kLoopShare * kLoopGrowShare) {
    double f = share > 0 ? kLoopShare * kLoopGrowShare / share : kLoopGrow;
    budget *= f > kLoopGrow ? kLoopGrow : f;
  }  // in between: held (level costs are steps apart: no flapping between two of them)
  b.chunk_ns = budget < kLoopChunkMinNs ? kLoopChunkMinNs : budget > kLoopChunkMaxNs ? kLoopChunkMaxNs : budget;
  b.share = share;
  b.win_start_ns = now_ns;
  b.win_cpu_ns = 0;
  b.win_cal_ns = 0;
  return true;
}

bool loop_may_calibrate(const LoopBudget& b, uint64_t now_ns) noexcept {
  if (b.win_start_ns == 0) return true;
  uint64_t span = now_ns > b.win_start_ns ? now_ns - b.win_start_ns : 0;
  if (span < kLoopWindowNs) span = kLoopWindowNs;  // a window's allowance from its start
  return b.cal_share < kLoopCalShare && static_cast<double>(b.win_cal_ns) < kLoopCalShare * static_cast<double>(span);
}

double loop_level_ns(const CostModel& m, uint8_t level, size_t len) noexcept {
  if (level == 0) return 0;
  if (level >= m.nlevels || !m.level[level].known) return -1;
  double gain = m.cpu_gain > 0 ? m.cpu_gain : 1.0;
  return m.level[level].cpu_ns_byte * gain * static_cast<double>(len);
}

uint8_t loop_level_cap(const CostModel& m, uint8_t want, size_t len, double budget_ns) noexcept {
  if (want >= m.nlevels) want = m.nlevels ? static_cast<uint8_t>(m.nlevels - 1) : 0;
  if (want < 2 || loop_level_ns(m, 1, len) < 0) return want;  // nothing calibrated yet: no figure to cap by
  for (uint8_t l = 2; l <= want; ++l) {
    double ns = loop_level_ns(m, l, len);
    if (ns < 0 || ns > budget_ns) return static_cast<uint8_t>(l - 1);
  }
  return want;
}

}  // namespace bonsai::compress
