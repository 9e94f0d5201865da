// SPDX-License-Identifier: MIT
// AdOC Figure 2 plus the divergence guard (see policy_queue.h).
#include "compress/policy_queue.h"

namespace bonsai::compress {
namespace {
constexpr uint64_t kForbidNs = 1'000'000'000;   // AdOC: forbid a diverging level for 1 s
constexpr uint64_t kBwFreshNs = 2'000'000'000;  // older bandwidth records are ignored

// AdOC Figure 2 (levels as indexes; minLevel 0).
int figure2(int n, int delta, int l, int max_level) {
  if (n == 0) return 0;
  if (n < 10) {
    if (delta <= 0) l = l / 2;
  } else if (n < 20) {
    if (delta > 0) ++l;
    else if (delta < 0) --l;
  } else if (n < 30) {
    if (delta > 0) l += 2;
    else if (delta < 0) --l;
  } else if (delta > 0) {
    l += 2;
  }
  if (l < 0) l = 0;
  if (l > max_level) l = max_level;
  return l;
}
}  // namespace

void queue_init(QueueState& s, uint8_t nlevels) noexcept {
  s = QueueState{};
  s.nlevels = nlevels ? nlevels : 1;
}

uint8_t queue_next(QueueState& s, int n, double visible_bw, uint64_t now_ns) noexcept {
  int cur = s.level;
  s.bw[cur] = s.bw[cur] > 0 && now_ns - s.bw_at[cur] < kBwFreshNs ? 0.5 * s.bw[cur] + 0.5 * visible_bw : visible_bw;
  s.bw_at[cur] = now_ns;
  // Divergence guard: a smaller level with better recent bandwidth wins.
  int best = cur;
  for (int l = 0; l < cur; ++l)
    if (s.bw[l] > s.bw[best] && now_ns - s.bw_at[l] < kBwFreshNs) best = l;
  int next;
  if (best != cur) {
    s.forbidden_until[cur] = now_ns + kForbidNs;
    next = best;
  } else {
    next = figure2(n, n - s.prev_n, cur, s.nlevels - 1);
    while (next > 0 && next > cur && s.forbidden_until[next] > now_ns) --next;
  }
  s.prev_n = n;
  s.level = static_cast<uint8_t>(next);
  return s.level;
}

}  // namespace bonsai::compress
