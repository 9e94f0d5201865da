// SPDX-License-Identifier: MIT
// The sending half of a compressed connection: cuts the application's bytes into
// chunks, compresses each at the level the policy picks as the next frame of the
// connection's codec stream (history across writes; tiny and incompressible chunks go
// raw), and sends the stream header and frames in full.
// Works in a fixed workspace: nothing allocates after tx_stream_init.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "compress/policy.h"
#include "compress/stream_io.h"

namespace bonsai::compress {

// Writes below this go out as raw frames without trying to compress. With history
// (wire v2) a 100-byte write of text compresses; below 64 bytes the frame header and
// zstd's block header eat the gain.
inline constexpr size_t kSmallWrite = 64;

struct TxStream {
  const LevelList* levels;
  PolicyState policy;
  TxStreamCodec codec;
  uint8_t* out;    // compressed payload, kMaxFrameWire bytes
  uint8_t* stage;  // a chunk gathered from several iovecs, kMaxFrameRaw bytes
  bool header_sent;
  int broken;        // errno of a failure that left a frame half-sent; 0 if none
  uint32_t skip_streak;  // consecutive chunks found incompressible
  uint32_t skip_left;    // chunks to send raw before sampling again
  uint64_t link_busy_ns, link_blocked_ns;  // decaying sums: does the byte cap bind?
  uint8_t cal_next;  // next level of a calibration round spread over chunks (0: none)
  uint64_t app_bytes, wire_bytes;
  uint64_t frames[kMethodCount];
  uint64_t level_chunks[kMaxLevels];
};

// Workspace bytes for a sender with these levels (buffers and codec).
size_t tx_stream_size(const LevelList& levels) noexcept;
// @return false if `size` is too small or a codec failed to initialise.
bool tx_stream_init(TxStream& s, void* mem, size_t size, const LevelList* levels,
                    const PolicyConfig& policy) noexcept;

// Sends iov[0..cnt) as frames on `fd` (blocking: a full non-blocking socket is
// waited for with poll). `flags` are send flags (MSG_NOSIGNAL, MSG_MORE kept).
// @return application bytes sent (all of them unless a send failed), or -1 with errno.
ssize_t tx_write(TxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt,
                 int flags) noexcept;

}  // namespace bonsai::compress
