// SPDX-License-Identifier: MIT
// A row of the policy table (compress/policy.h) and what every row works on: the
// policies' names and configuration (BONSAI_POLICIES), the report of a chunk sent, a
// connection's policy state (each policy's own state embedded, from its
// policy_NAME_state.h), PolicyOps (the code of one row, defined in its
// compress/policy_NAME.cc) and the period bookkeeping the rows share (policy_row.cc).
// Below the policies and the dispatcher alike, so that both include it and neither the
// other. Pure: time is passed in.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_datarate_state.h"
#include "compress/policy_model.h"
#include "compress/policy_queue_state.h"

namespace bonsai::compress {

// X(Kind, name, takes a level: "name:LEVEL"). The first row is the default.
#define BONSAI_POLICIES(X)   \
  X(Datarate, datarate, false) \
  X(Queue, queue, false)       \
  X(Fixed, fixed, true)

enum class PolicyKind : uint8_t {
#define BONSAI_X(kind, name, takes_level) kind,
  BONSAI_POLICIES(BONSAI_X)
#undef BONSAI_X
};

struct PolicyName {
  const char* name;
  bool takes_level;  // written "name:LEVEL", LEVEL one of the connection's levels
};
inline constexpr PolicyName kPolicyNames[] = {
#define BONSAI_X(kind, name, takes_level) {#name, takes_level},
    BONSAI_POLICIES(BONSAI_X)
#undef BONSAI_X
};
inline constexpr size_t kPolicyCount = sizeof kPolicyNames / sizeof kPolicyNames[0];

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
inline constexpr uint32_t kWarmSkipMax = 16;  // first chunks, up to the first that waited, left out
inline constexpr uint64_t kResampleNs = 1'000'000'000;

// What the sender saw while sending one chunk.
struct ChunkReport {
  uint64_t now_ns;
  uint64_t app_bytes;   // application bytes in the chunk
  uint64_t wire_bytes;  // bytes it took on the wire (headers included)
  uint64_t busy_ns;     // time spent on the chunk: compressing and sending
  uint64_t blocked_ns;  // part of busy_ns spent waiting (bucket or full socket)
  uint64_t cpu_ns;      // part of busy_ns spent compressing
  // Compressed at another level than the policy's: one above (tx_stream's mix) or
  // below (an event loop's budget, tx_loop_budget.h). Not that level's figures.
  bool promoted;
};

struct PolicyState {
  PolicyConfig cfg;
  uint8_t level;  // index of the level for the next chunk
  uint32_t acc_chunks;
  uint64_t acc_bytes, acc_wire, acc_busy_ns, acc_blocked_ns, acc_cpu_ns;
  uint32_t acc_promoted;  // chunks of the period compressed one level up
  bool settle;  // the first chunk after a change is not measured (carries the old level's debt)
  bool sampled;
  uint32_t warm_skipped;
  bool warm_waited;  // datarate: a chunk of the first period has waited for the bucket
  bool cap_seen;     // policy_cap_rate has been called (a later change is a live one)
  uint64_t sampled_at_ns;
  CostModel model;
  DatarateState dr;
  QueueState q;
};

// What one policy does (its row of the table; compress/policy_NAME.cc).
struct PolicyOps {
  // After the common set-up (state zeroed, cfg copied, models initialised, level 0).
  void (*init)(PolicyState& s) noexcept;
  // One chunk's report. @return the level index for the next chunk.
  uint8_t (*on_chunk)(PolicyState& s, const ChunkReport& r) noexcept;
  // Whether to calibrate on the next chunk (nullptr: never).
  bool (*wants_sample)(const PolicyState& s, uint64_t now_ns) noexcept;
  // A round over every level on one chunk is complete (nullptr: nothing to do).
  // @return the level index for the next chunk.
  uint8_t (*on_round)(PolicyState& s) noexcept;
};

// For the policies' on_chunk (policy_row.cc): a chunk changes nothing right after a level
// change (`settle`: it carries the old level's debt). Else it is added to the period's
// totals: @return true, with the period's application bytes per busy second in
// `rate`, when the period is complete (busy time >= `period_ns`, >= `min_chunks`).
bool policy_settling(PolicyState& s) noexcept;
bool policy_period_add(PolicyState& s, const ChunkReport& r, uint64_t period_ns, uint32_t min_chunks,
                       double& rate) noexcept;
// Ends a complete period whose decision moved the level from `before`.
void policy_period_end(PolicyState& s, uint8_t before) noexcept;

}  // namespace bonsai::compress
