// SPDX-License-Identifier: MIT
// The compressed stream's wire format, version 4 (docs/reference/wire-format.md): an 8-byte
// stream header, then frames of a 12-byte header and a payload. Frames carry codec
// streams with history across frames; a connection may carry two zstd streams (flag
// kFlagZstd2, since version 3), each with a window of up to 8 MiB (version 4; 2 MiB
// before). Version 3 (2 MiB windows), version 2 (one zstd stream) and version 1
// (self-contained frames) are still decoded. Pure encode/parse helpers: no I/O, no
// allocation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace bonsai::compress {

inline constexpr uint8_t kStreamMagic[7] = {0x89, 'B', 'N', 'Z', '\r', '\n', 0x1a};
inline constexpr uint8_t kWireVersion = 4;       // what a sender writes
inline constexpr uint8_t kWireVersionNarrow = 3; // two zstd streams, 2 MiB windows: still decoded
inline constexpr uint8_t kWireVersionOne = 2;    // one zstd stream: still decoded
inline constexpr uint8_t kWireVersionOld = 1;    // self-contained frames: still decoded
// The largest zstd window (log2 bytes) a stream of `version` may ask for: 8 MiB from
// version 4 (what `zstd --adapt` uses), 2 MiB before. A decoder refuses a zstd frame
// asking for more. why: see docs/notes/compression-measured.md#the-zstd-window-and-match-tables
inline constexpr int kZstdWindowLogMax = 23;
inline constexpr int kZstdWindowLogNarrow = 21;
inline constexpr int zstd_window_log_max(uint8_t version) {
  return version >= 4 ? kZstdWindowLogMax : kZstdWindowLogNarrow;
}
inline constexpr size_t kStreamHeaderSize = 8;
inline constexpr size_t kFrameHeaderSize = 12;
// Largest raw length of one frame a decoder accepts (and what an encoder emits).
inline constexpr size_t kMaxFrameRaw = 128 * 1024;
// v2: a compressed frame continues a codec stream and may not be undone, so it may be
// slightly larger than its raw data (incompressible bytes the sampler let through):
// at most raw + raw/255 + kFrameSlack (lz4's bound; zstd's flush adds 3 bytes a block
// and at most an 18-byte frame header).
inline constexpr size_t kFrameSlack = 64;
inline constexpr size_t kMaxFrameWire = kMaxFrameRaw + kMaxFrameRaw / 255 + kFrameSlack;
// The most one frame takes on the wire, with the stream header in front: what a buffer
// holding a whole frame (a sender's, a receiver's) must hold. Larger than
// kMaxFrameRaw + 64: v2 frames may exceed their raw length.
inline constexpr size_t kMaxFrameBytes = kStreamHeaderSize + kFrameHeaderSize + kMaxFrameWire;

enum class Method : uint8_t { Raw = 0, Lz4 = 1, Zstd = 2 };
inline constexpr uint8_t kMethodCount = 3;

// Frame flags (byte 1 of the frame header; v1: reserved, 0).
inline constexpr uint8_t kFlagNewStream = 1;  // the codec's stream starts afresh (no history)
// v3 and v4, zstd frames only: the frame belongs to the connection's second zstd stream. A
// sender keeps two zstd streams at two levels, so it can send chunks at either (the mix
// of two levels, and a probe of another level and back) without dropping the history
// of either: single-threaded zstd cannot change level inside a frame.
inline constexpr uint8_t kFlagZstd2 = 2;

struct FrameHeader {
  Method method;
  uint32_t raw_len;   // 1..kMaxFrameRaw
  uint32_t wire_len;  // payload bytes: == raw_len for Raw; see frame_header_parse
  uint8_t flags = 0;  // v2+: kFlagNewStream (compressed methods), v3+: kFlagZstd2 (zstd)
};

inline void put_le32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}
inline uint32_t get_le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline void stream_header_write(uint8_t* out, uint8_t version = kWireVersion) {
  std::memcpy(out, kStreamMagic, sizeof kStreamMagic);
  out[7] = version;
}

// How the first bytes of a stream compare with the stream header (Yes: a version
// this decoder knows, 1 to 4).
enum class HeaderMatch { No, Prefix, Yes, BadVersion };
inline HeaderMatch stream_header_match(const uint8_t* p, size_t n) {
  size_t m = n < sizeof kStreamMagic ? n : sizeof kStreamMagic;
  if (std::memcmp(p, kStreamMagic, m) != 0) return HeaderMatch::No;
  if (n < kStreamHeaderSize) return HeaderMatch::Prefix;
  return p[7] >= kWireVersionOld && p[7] <= kWireVersion ? HeaderMatch::Yes : HeaderMatch::BadVersion;
}

// Largest payload of a compressed frame of raw_len bytes (v2 to v4).
inline constexpr uint32_t frame_wire_bound(uint32_t raw_len) {
  return raw_len + raw_len / 255 + static_cast<uint32_t>(kFrameSlack);
}

inline void frame_header_write(uint8_t* out, const FrameHeader& h) {
  out[0] = static_cast<uint8_t>(h.method);
  out[1] = h.flags;
  out[2] = out[3] = 0;
  put_le32(out + 4, h.raw_len);
  put_le32(out + 8, h.wire_len);
}

// Parses and validates a frame header of a stream of `version` (1 to 4).
// @return false if it is not a valid header.
inline bool frame_header_parse(const uint8_t* p, FrameHeader& h, uint8_t version = kWireVersion) {
  if (p[0] >= kMethodCount || p[2] || p[3]) return false;
  h.method = static_cast<Method>(p[0]);
  h.flags = p[1];
  h.raw_len = get_le32(p + 4);
  h.wire_len = get_le32(p + 8);
  if (h.raw_len == 0 || h.raw_len > kMaxFrameRaw) return false;
  if (h.method == Method::Raw) return h.flags == 0 && h.wire_len == h.raw_len;
  if (version == kWireVersionOld) return h.flags == 0 && h.wire_len > 0 && h.wire_len < h.raw_len;
  uint8_t allowed = kFlagNewStream;
  if (version >= 3 && h.method == Method::Zstd) allowed |= kFlagZstd2;
  return (h.flags & ~allowed) == 0 && h.wire_len > 0 && h.wire_len <= frame_wire_bound(h.raw_len);
}

}  // namespace bonsai::compress
