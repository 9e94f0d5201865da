// SPDX-License-Identifier: MIT
// Policy configuration and per-chunk dispatch (see policy.h).
#include "compress/policy.h"

#include <cstring>

namespace bonsai::compress {
namespace {
// queue: AdOC's emission queue does not exist in a synchronous sender; its length
// is mapped from the share of time the sender was blocked (bucket or full socket):
// 25% -> 10 packets, 50% -> 20, 75% -> 30 (Figure 2's thresholds).
int queue_packets(uint64_t blocked_ns, uint64_t busy_ns) {
  if (busy_ns == 0) return 0;
  return static_cast<int>(40.0 * static_cast<double>(blocked_ns) / static_cast<double>(busy_ns));
}
constexpr uint64_t kQueueUpdateNs = 10'000'000;
}  // namespace

const char* policy_parse(const char* text, const LevelList& levels, PolicyConfig& out) noexcept {
  PolicyConfig c{PolicyKind::Datarate, 0, kDefaultPeriodNs, kDefaultAlpha};
  if (!text || !*text || std::strcmp(text, "datarate") == 0) {
  } else if (std::strcmp(text, "queue") == 0) {
    c.kind = PolicyKind::Queue;
  } else if (std::strncmp(text, "fixed:", 6) == 0) {
    LevelList one{};
    if (levels_parse(text + 6, one) || one.count > 2) return "fixed:LEVEL needs one level";
    Level want = one.count == 2 ? one.levels[1] : one.levels[0];
    c.kind = PolicyKind::Fixed;
    bool found = false;
    for (uint8_t i = 0; i < levels.count && !found; ++i)
      if (levels.levels[i].method == want.method && levels.levels[i].param == want.param) {
        c.fixed_level = i;
        found = true;
      }
    if (!found) return "fixed level is not in the level list";
  } else {
    return "unknown policy (datarate, queue, fixed:LEVEL)";
  }
  out = c;
  return nullptr;
}

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept {
  s = PolicyState{};
  s.cfg = cfg;
  datarate_init(s.dr, nlevels, 0);
  queue_init(s.q, nlevels);
  s.level = cfg.kind == PolicyKind::Fixed ? cfg.fixed_level : 0;
}

uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept {
  if (s.cfg.kind == PolicyKind::Fixed) return s.level;
  if (s.settle) {
    s.settle = false;
    return s.level;
  }
  s.acc_bytes += r.app_bytes;
  s.acc_busy_ns += r.busy_ns;
  s.acc_blocked_ns += r.blocked_ns;
  uint64_t period = s.cfg.kind == PolicyKind::Datarate ? s.cfg.period_ns : kQueueUpdateNs;
  if (s.acc_busy_ns < period) return s.level;
  double rate = static_cast<double>(s.acc_bytes) * 1e9 / static_cast<double>(s.acc_busy_ns);
  uint8_t before = s.level;
  if (s.cfg.kind == PolicyKind::Datarate)
    s.level = datarate_next(s.dr, rate, s.cfg.alpha);
  else
    s.level = queue_next(s.q, queue_packets(s.acc_blocked_ns, s.acc_busy_ns), rate, r.now_ns);
  s.settle = s.level != before;
  s.acc_bytes = s.acc_busy_ns = s.acc_blocked_ns = 0;
  return s.level;
}

}  // namespace bonsai::compress
