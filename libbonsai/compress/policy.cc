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
  model_init(s.model, nlevels);
  queue_init(s.q, nlevels);
  s.level = cfg.kind == PolicyKind::Fixed ? cfg.fixed_level : 0;
  s.settle = cfg.kind == PolicyKind::Datarate;  // the first chunk spends the bucket's initial depth
}

bool policy_wants_sample(const PolicyState& s, uint64_t now_ns) noexcept {
  return s.cfg.kind == PolicyKind::Datarate && (!s.sampled || now_ns - s.sampled_at_ns >= kResampleNs);
}

void policy_on_sample(PolicyState& s, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                      uint64_t now_ns) noexcept {
  model_sample(s.model, level, app, wire, cpu_ns);
  s.sampled = true;
  s.sampled_at_ns = now_ns;
}

uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept {
  if (s.cfg.kind == PolicyKind::Fixed) return s.level;
  if (s.settle) {
    s.settle = false;
    return s.level;
  }
  // datarate's first period measures the link: chunks that did not wait spend the
  // bucket's initial depth (10 ms of rate) and would overstate it.
  if (s.cfg.kind == PolicyKind::Datarate && !s.dr.warm && r.blocked_ns == 0 && s.warm_skipped < kWarmSkipMax) {
    ++s.warm_skipped;
    return s.level;
  }
  s.acc_chunks += 1;
  s.acc_bytes += r.app_bytes;
  s.acc_wire += r.wire_bytes;
  s.acc_busy_ns += r.busy_ns;
  s.acc_blocked_ns += r.blocked_ns;
  s.acc_cpu_ns += r.cpu_ns;
  bool dr = s.cfg.kind == PolicyKind::Datarate;
  // datarate: the first period and the period after a change (a probe) are short.
  bool brief = dr && (!s.dr.warm || s.dr.probe_from >= 0);
  uint64_t period = !dr ? kQueueUpdateNs : brief ? s.cfg.period_ns / 4 : s.cfg.period_ns;
  if (s.acc_busy_ns < period || (brief && s.acc_chunks < kWarmChunks)) return s.level;
  double rate = static_cast<double>(s.acc_bytes) * 1e9 / static_cast<double>(s.acc_busy_ns);
  uint8_t before = s.level;
  if (dr) {
    model_observe(s.model, s.level, s.acc_bytes, s.acc_wire, s.acc_busy_ns, s.acc_blocked_ns, s.acc_cpu_ns);
    s.level = datarate_next(s.dr, rate, s.cfg.alpha, s.model);
    if (s.dr.dropped) s.sampled = false, s.dr.dropped = false;  // calibrate on the new data
  } else {
    s.level = queue_next(s.q, queue_packets(s.acc_blocked_ns, s.acc_busy_ns), rate, r.now_ns);
  }
  s.settle = s.level != before;
  s.acc_chunks = 0;
  s.acc_bytes = s.acc_wire = s.acc_busy_ns = s.acc_blocked_ns = s.acc_cpu_ns = 0;
  return s.level;
}

}  // namespace bonsai::compress
