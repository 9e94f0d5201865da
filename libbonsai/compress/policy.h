// SPDX-License-Identifier: MIT
// Choosing a connection's compression level: the policy configuration
// (BONSAI_COMPRESS_POLICY: datarate | queue | fixed:LEVEL) and one state per
// connection fed a report per chunk sent (and, for datarate, calibration samples).
// Pure: time is passed in.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_datarate.h"
#include "compress/policy_queue.h"

namespace bonsai::compress {

enum class PolicyKind : uint8_t { Datarate, Queue, Fixed };

struct PolicyConfig {
  PolicyKind kind;
  uint8_t fixed_level;  // index into the level list (Fixed)
  uint64_t period_ns;   // datarate: measuring period (BONSAI_COMPRESS_PERIOD)
  double alpha;         // datarate: tolerance (BONSAI_COMPRESS_ALPHA)
};

inline constexpr uint64_t kDefaultPeriodNs = 200'000'000;
inline constexpr double kDefaultAlpha = 0.2;  // Hovestadt et al.: 0.2
// datarate: the first period (at "none", to see the link) and the period after a
// change (judging a probe) last period/4 and at least kWarmChunks chunks (after the
// unmeasured settling chunk); every level is re-sampled every kResampleNs.
inline constexpr uint32_t kWarmChunks = 2;
inline constexpr uint32_t kWarmSkipMax = 16;  // first chunks that did not wait, left out
inline constexpr uint64_t kResampleNs = 1'000'000'000;

// Parses "datarate", "queue", "fixed:zstd:3" (the level must be in `levels`).
// @return nullptr, or what is wrong.
const char* policy_parse(const char* text, const LevelList& levels, PolicyConfig& out) noexcept;

// What the sender saw while sending one chunk.
struct ChunkReport {
  uint64_t now_ns;
  uint64_t app_bytes;   // application bytes in the chunk
  uint64_t wire_bytes;  // bytes it took on the wire (headers included)
  uint64_t busy_ns;     // time spent on the chunk: compressing and sending
  uint64_t blocked_ns;  // part of busy_ns spent waiting (bucket or full socket)
  uint64_t cpu_ns;      // part of busy_ns spent compressing
};

struct PolicyState {
  PolicyConfig cfg;
  uint8_t level;  // index of the level for the next chunk
  uint32_t acc_chunks;
  uint64_t acc_bytes, acc_wire, acc_busy_ns, acc_blocked_ns, acc_cpu_ns;
  bool settle;  // the first chunk after a change is not measured (carries the old level's debt)
  bool sampled;
  uint32_t warm_skipped;
  uint64_t sampled_at_ns;
  CostModel model;
  DatarateState dr;
  QueueState q;
};

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept;

// Feeds one chunk's report. @return the level index for the next chunk.
uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept;

// Should the sender compress the next (large, compressible-looking) chunk at every
// level and report it with policy_on_sample? (datarate only: at the start and every
// kResampleNs.)
bool policy_wants_sample(const PolicyState& s, uint64_t now_ns) noexcept;
// One level's calibration result (wire == app: the chunk did not compress).
void policy_on_sample(PolicyState& s, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                      uint64_t now_ns) noexcept;

}  // namespace bonsai::compress
