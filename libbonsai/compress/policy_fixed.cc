// SPDX-License-Identifier: MIT
// The `fixed:LEVEL` policy: every chunk at the one level configured (its index in the
// connection's level list, found by policy_parse).
#include "compress/policy_row.h"

namespace bonsai::compress {
namespace {

void fixed_init(PolicyState& s) noexcept { s.level = s.cfg.fixed_level; }
uint8_t fixed_on_chunk(PolicyState& s, const ChunkReport&) noexcept { return s.level; }

}  // namespace

extern const PolicyOps kFixedOps{fixed_init, fixed_on_chunk, nullptr, nullptr};

}  // namespace bonsai::compress
