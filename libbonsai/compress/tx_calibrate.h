// SPDX-License-Identifier: MIT
// The sending half's calibration rounds for the datarate policy's model: each level
// compresses the same chunk one-shot on the process's shared calibrator (the
// connection's streams are not touched), its ratio and time reported to the policy.
// The first round runs every level at once; later ones spread over the next chunks.
// Called by tx_write (tx_stream.cc) on a chunk before it is compressed.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/stream_io.h"
#include "compress/tx_state.h"

namespace bonsai::compress {

// Whether the chunk of `len` bytes about to be sent calibrates: a round is in progress
// or the policy asks for one, and (at a binding cap) the sender is ahead of the link by
// `lead` bucket depths (-1: not known).
bool tx_wants_calibration(const TxStream& s, size_t len, uint64_t now_ns, double lead) noexcept;

// Runs this chunk's part of a round (the whole first round) on src[0..len), and
// switches the long-distance matcher by the ratios the rounds found. `budget_ns` > 0
// (a non-blocking sender, compress/tx_loop_budget.h): no level that does not fit one
// chunk's budget runs (the first round stops after the first that took longer).
void tx_calibrate(TxStream& s, const IoOps& io, const void* src, size_t len, double budget_ns = 0) noexcept;

}  // namespace bonsai::compress
