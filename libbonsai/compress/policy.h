// SPDX-License-Identifier: MIT
// Choosing a connection's compression level: the policy configuration
// (BONSAI_COMPRESS_POLICY: datarate | queue | fixed:LEVEL) and one state per
// connection fed a report per chunk sent (and, for datarate, calibration samples).
// The policies are a table, fio-style: one row each in BONSAI_POLICIES (its name, read
// by the library and by bonsaictl's `compression:` check) and one file each,
// compress/policy_NAME.cc, defining its PolicyOps (the code, library only); what a row
// is and works on: compress/policy_row.h. This header is the face the sender and the
// settings include: the rows, the policies' algorithms and the dispatch (policy.cc).
// Pure: time is passed in.
#pragma once
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_datarate.h"
#include "compress/policy_queue.h"
#include "compress/policy_row.h"

namespace bonsai::compress {

// Parses a policy of kPolicyNames: "datarate", "queue", "fixed:zstd:3" (the level
// must be in `levels`). compress/grammar.cc (bonsaictl links it too).
// @return nullptr, or what is wrong.
const char* policy_parse(const char* text, const LevelList& levels, PolicyConfig& out) noexcept;

#define BONSAI_X(kind, name, takes_level) extern const PolicyOps k##kind##Ops;
BONSAI_POLICIES(BONSAI_X)
#undef BONSAI_X

void policy_init(PolicyState& s, const PolicyConfig& cfg, uint8_t nlevels) noexcept;

// Before a connection's first chunk, when a byte cap applies to it: datarate starts at
// the middle of the ladder (zstd:3 in the default list) instead of `none`, so its first
// period (which measures the link: the wire rate is seen at any level) already
// compresses. Uncapped senders still start at `none`.
// why: see docs/notes/compression-measured.md#the-policys-start-and-a-live-cap-change
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
