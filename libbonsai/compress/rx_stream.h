// SPDX-License-Identifier: MIT
// The receiving half of a compressed connection: checks the stream header, decodes
// frames and serves reads of any size from the decoded bytes. Raw frames may be
// received straight into the caller's buffer, but like every frame they are handed
// out only whole. A corrupt or truncated stream fails every read with ECONNRESET
// (one log line), never yields garbage or part of a frame. Fixed workspace.
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "compress/stream_io.h"

namespace bonsai::compress {

// Wire bytes buffered at most: a stream header plus one whole frame.
inline constexpr size_t kRxInCap = kMaxFrameBytes;

struct RxStream {
  uint8_t* in;  // kRxInCap bytes of wire data, [in_beg, in_end) unparsed
  size_t in_beg, in_end;
  uint8_t* out;        // kMaxFrameRaw bytes: zstd decodes here
  const uint8_t* dec;  // the decoded frame (in `out` or the lz4 ring), [out_pos, out_len) not yet read
  size_t out_pos, out_len;
  uint32_t raw_left;  // payload bytes of the current raw frame not yet read
  bool need_stream_header;
  uint8_t version;  // the stream's wire version (1: self-contained frames, 2: streams, 3: two zstd streams)
  int error;  // errno every read returns once the stream is broken (0: fine)
  RxCodec codec;
  // Where the second zstd stream's decoder workspace comes from, when its first frame
  // arrives (set after rx_stream_init; without it such a frame is refused).
  ExtraMem extra;
  uint64_t app_bytes, wire_bytes;
};

size_t rx_stream_size() noexcept;
bool rx_stream_init(RxStream& s, void* mem, size_t size) noexcept;

// Serves a read of iov[0..cnt) (recv flags: MSG_PEEK, MSG_WAITALL, MSG_DONTWAIT
// honoured). Blocks only where the real recv on `fd` would. Each real recv asks `m`
// first and is charged to it (byte limits count wire bytes).
// @return bytes read, 0 at the end of the stream, or -1 with errno.
ssize_t rx_read(RxStream& s, const IoOps& io, const WireMeter& m, int fd, const iovec* iov, int cnt, int flags) noexcept;

// @return true if a read would return without touching the socket (decoded or raw
// bytes waiting, a whole frame buffered, or an error to report).
bool rx_pending(const RxStream& s) noexcept;

}  // namespace bonsai::compress
