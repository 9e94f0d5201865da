// SPDX-License-Identifier: MIT
// AdOC Figure 2 plus the divergence guard (see policy_queue.h), and the `queue` row of
// the policy table (compress/policy.h).
#include "compress/policy_queue.h"

#include "compress/policy_row.h"

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


// ---- the policy table's row (compress/policy.h) ----
namespace {
// AdOC's emission queue does not exist in a synchronous sender; its length is mapped
// from the share of time the sender was blocked (bucket or full socket): 25% -> 10
// packets, 50% -> 20, 75% -> 30 (Figure 2's thresholds).
int queue_packets(uint64_t blocked_ns, uint64_t busy_ns) {
  if (busy_ns == 0) return 0;
  return static_cast<int>(40.0 * static_cast<double>(blocked_ns) / static_cast<double>(busy_ns));
}
constexpr uint64_t kQueueUpdateNs = 10'000'000;

void queue_policy_init(PolicyState&) noexcept {}

uint8_t queue_on_chunk(PolicyState& s, const ChunkReport& r) noexcept {
  if (policy_settling(s)) return s.level;
  double rate;
  if (!policy_period_add(s, r, kQueueUpdateNs, 0, rate)) return s.level;
  uint8_t before = s.level;
  s.level = queue_next(s.q, queue_packets(s.acc_blocked_ns, s.acc_busy_ns), rate, r.now_ns);
  policy_period_end(s, before);
  return s.level;
}
}  // namespace

extern const PolicyOps kQueueOps{queue_policy_init, queue_on_chunk, nullptr, nullptr};

}  // namespace bonsai::compress
