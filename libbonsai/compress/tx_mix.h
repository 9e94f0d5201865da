// SPDX-License-Identifier: MIT
// The mix of two levels (inside compress/ only: tx_stream.cc): at a binding cap, a
// datarate sender ahead of the link compresses some chunks one level above the
// policy's, and a change of zstd level goes to the sender's second zstd stream so the
// first keeps its history. No allocation (the second stream's workspace comes from
// TxStream::extra).
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/stream_io.h"
#include "compress/tx_state.h"

namespace bonsai::compress {

// Whether the mix's promoted chunks measured level `up` within the last kResampleNs
// (promo_ns_byte, promo_wire_byte): an older figure, another process's CPU say, must
// not decide for good.
bool tx_promo_measured(const TxStream& s, unsigned up, uint64_t now_ns) noexcept;

// Whether this chunk of `len` bytes is compressed one level above the policy's `lvl`
// (`lead`: how far ahead of the link the sender is, in bucket depths; -1 unknown).
// Datarate only (a fixed level is fixed).
bool tx_promote_chunk(TxStream& s, const WireMeter& m, uint8_t lvl, double lead, size_t len, uint64_t now_ns) noexcept;

// What a promoted chunk at `lvl` cost (cpu_ns compressing `len` bytes into `wire`
// bytes, 0: sent raw, at c0_ns), for the next promotions.
void tx_promo_note(TxStream& s, uint8_t lvl, uint64_t c0_ns, uint64_t cpu_ns, size_t wire, size_t len) noexcept;

// Before a chunk at another zstd level than the open stream's (a policy's change or
// probe, not a fixed level's): the second zstd stream takes it, so the first keeps its
// history for the way back. (Not for the one new frame at the same level that widens
// the window: codec.h, kZstdWidenAfter.)
void tx_keep_zstd_history(TxStream& s, Level level) noexcept;

}  // namespace bonsai::compress
