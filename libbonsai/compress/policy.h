// SPDX-License-Identifier: MIT
// Choosing a connection's compression level: the policy configuration
// (BONSAI_COMPRESS_POLICY: datarate | queue | fixed:LEVEL) and one state per
// connection fed a report per chunk sent (and, for datarate, calibration samples).
// The policies are a table, fio-style: one row each in BONSAI_POLICIES (its name, read
// by the library and by bonsaictl's `compression:` check) and one file each,
// compress/policy_NAME.cc, defining its PolicyOps (the code, library only).
// Pure: time is passed in.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_datarate.h"
#include "compress/policy_queue.h"

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

// Parses a policy of kPolicyNames: "datarate", "queue", "fixed:zstd:3" (the level
// must be in `levels`). compress/grammar.cc (bonsaictl links it too).
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
#define BONSAI_X(kind, name, takes_level) extern const PolicyOps k##kind##Ops;
BONSAI_POLICIES(BONSAI_X)
#undef BONSAI_X

// For the policies' on_chunk (policy.cc): a chunk changes nothing right after a level
// change (`settle`: it carries the old level's debt). Else it is added to the period's
// totals: @return true, with the period's application bytes per busy second in
// `rate`, when the period is complete (busy time >= `period_ns`, >= `min_chunks`).
bool policy_settling(PolicyState& s) noexcept;
bool policy_period_add(PolicyState& s, const ChunkReport& r, uint64_t period_ns, uint32_t min_chunks,
                       double& rate) noexcept;
// Ends a complete period whose decision moved the level from `before`.
void policy_period_end(PolicyState& s, uint8_t before) noexcept;

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept;

// Before a connection's first chunk, when a byte cap applies to it: datarate starts at
// the middle of the ladder (zstd:3 in the default list) instead of `none`, so its first
// period (which measures the link: the wire rate is seen at any level) already
// compresses. Uncapped senders still start at `none`.
// why: see docs/compression-measured.md#the-policys-start-and-a-live-cap-change
// `rate_bps` (0: unknown): the cap's rate, the model's link until a period measures
// it, so that the first calibration round already picks a level (see datarate's
// on_round).
void policy_capped_start(PolicyState& s, double rate_bps) noexcept;

// At every write: the byte cap's current rate (0: none applies), the link's upper bound
// for the model (CostModel::cap_bps). A change after the first write (a live `bonsaictl
// set`) restarts datarate as at its first period, with the new rate as the link.
void policy_cap_rate(PolicyState& s, double rate_bps) noexcept;

// Feeds one chunk's report. @return the level index for the next chunk.
uint8_t policy_on_chunk(PolicyState& s, const ChunkReport& r) noexcept;

// Should the sender compress the next (large, compressible-looking) chunk at every
// level and report it with policy_on_sample? (datarate only: at the start and every
// kResampleNs.)
bool policy_wants_sample(const PolicyState& s, uint64_t now_ns) noexcept;
// One level's calibration result (wire == app: the chunk did not compress).
// `same_chunk`: one of a round over every level on the same chunk.
void policy_on_sample(PolicyState& s, uint8_t level, uint64_t app, uint64_t wire, uint64_t cpu_ns,
                      uint64_t now_ns, bool same_chunk = false) noexcept;

}  // namespace bonsai::compress
