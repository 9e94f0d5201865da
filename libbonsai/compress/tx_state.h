// SPDX-License-Identifier: MIT
// The state of a compressed connection's sending half (TxStream): its levels and policy
// state, codec stream, workspaces, send buffer, calibration round, the mix's
// measurements and its totals; with the small inline questions asked of it. The parts
// that act on it include this, not each other's headers: the send path
// (tx_stream.h), the mix of two levels (tx_mix.h), calibration (tx_calibrate.h), the
// socket and the send buffer (tx_send_buffer.h). Data only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy_row.h"
#include "compress/stream_io.h"

namespace bonsai::compress {

struct TxStream {
  const LevelList* levels;
  PolicyState policy;
  TxStreamCodec codec;
  uint8_t* out;    // compressed payload, kMaxFrameWire bytes
  uint8_t* stage;  // a chunk gathered from several iovecs, kMaxFrameRaw bytes
  // The send buffer: the unsent tail of at most one frame (stream header, frame
  // header, payload) that a non-blocking write took but the socket did not.
  uint8_t* pend;      // kPendSize bytes
  size_t pend_len;    // bytes held
  size_t pend_off;    // bytes of them already sent
  uint64_t full_since;  // when a non-blocking write last left the socket full (0: not)
  bool header_sent;
  int broken;        // errno of a failure that left a frame half-sent; 0 if none
  uint32_t skip_streak;  // consecutive chunks found incompressible
  uint32_t skip_left;    // chunks to send raw before sampling again
  uint64_t link_busy_ns, link_blocked_ns;  // decaying sums: does the byte cap bind?
  bool last_waited;  // the last chunk waited (for the bucket or a full socket)
  uint8_t cal_next;  // next level of a calibration round spread over chunks (0: none)
  bool cal_pair;         // that round runs on the calibrator's copy of one chunk
  uint8_t cal_pass;      // and that level's run: 0 or 1 (the faster of two counts)
  uint64_t cal_first_ns; // the time of its run 0
  bool cal_paired;       // the first round (every level on one chunk at once) is done
  // Where the second zstd stream's workspace comes from (set after tx_stream_init;
  // without it the sender keeps one zstd stream).
  ExtraMem extra;
  bool extra_failed;  // it gave none: not asked again
  uint8_t promo_level;   // the level of the last promoted chunks (the mix), their
  double promo_ns_byte;  // compression time per byte (EWMA; 0: none measured),
  double promo_wire_byte;  // wire bytes per application byte (EWMA),
  uint64_t promo_at_ns;  // and when the last of them was compressed
  uint8_t promo_run;     // chunks left of a run promoted across the zstd streams
  uint64_t app_bytes, wire_bytes;
  uint64_t frames[kMethodCount];
  uint64_t level_chunks[kMaxLevels];
};

// A sender whose bucket's clock runs more than this share of the depth past now is
// ahead of the link: the link binds, and the CPU has that much time to spare.
inline constexpr double kAheadShare = 0.5;

// Whether the byte cap binds: at least kBindingShare of the sender's recent busy time
// (decaying sums over ~8 chunks) was spent waiting.
inline bool tx_cap_binds(const TxStream& s) noexcept {
  return static_cast<double>(s.link_blocked_ns) >= kBindingShare * static_cast<double>(s.link_busy_ns) &&
         s.link_blocked_ns > 0;
}

// The send buffer's capacity: one whole frame with the stream header (a v2 frame may
// be larger than its raw bytes: kMaxFrameBytes bounds it).
inline constexpr size_t kPendSize = kMaxFrameBytes;

// Bytes in the send buffer not yet sent.
inline size_t tx_pending(const TxStream& s) noexcept { return s.pend_len - s.pend_off; }

// Forgets the send buffer (a fork()ed child: the parent owns those bytes) and makes
// every later write fail with `err`.
inline void tx_disown(TxStream& s, int err) noexcept {
  s.pend_len = s.pend_off = 0;
  s.broken = err;
}

}  // namespace bonsai::compress
