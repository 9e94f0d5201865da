// SPDX-License-Identifier: MIT
// Choosing a connection's compression level: the policy configuration
// (BONSAI_COMPRESS_POLICY: datarate | queue | fixed:LEVEL) and one state per
// connection fed a report per chunk sent. Pure: time is passed in.
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

// Parses "datarate", "queue", "fixed:zstd:3" (the level must be in `levels`).
// @return nullptr, or what is wrong.
const char* policy_parse(const char* text, const LevelList& levels, PolicyConfig& out) noexcept;

// What the sender saw while sending one chunk.
struct ChunkReport {
  uint64_t now_ns;
  uint64_t app_bytes;   // application bytes in the chunk
  uint64_t busy_ns;     // time spent on the chunk: compressing and sending
  uint64_t blocked_ns;  // part of busy_ns spent waiting (bucket or full socket)
};

struct PolicyState {
  PolicyConfig cfg;
  uint8_t level;  // index of the level for the next chunk
  uint64_t acc_bytes, acc_busy_ns, acc_blocked_ns;
  bool settle;  // the first chunk after a change is not measured (carries the old level's debt)
  DatarateState dr;
  QueueState q;
};

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept;

// Feeds one chunk's report. @return the level index for the next chunk.
uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept;

}  // namespace bonsai::compress
