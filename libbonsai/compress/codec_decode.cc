// SPDX-License-Identifier: MIT
// The decoders (see codec.h): one-shot frames and a connection's streams (lz4's ring,
// up to two zstd decoders, each 2 MiB or widened to 8 MiB), on fixed workspaces. zstd
// decoders are static (ZSTD_initStaticDStream): zstd never allocates or resizes them.
#define ZSTD_STATIC_LINKING_ONLY
#include <cstring>
#include <lz4.h>
#include <zstd.h>

#include "compress/codec.h"
#include "compress/codec_params.h"

namespace bonsai::compress {
namespace {
size_t dstream_room(int window_log) { return codec_align16(ZSTD_estimateDStreamSize(size_t{1} << window_log)); }
size_t align16(size_t n) { return codec_align16(n); }
}  // namespace

size_t rx_codec_size() noexcept {
  return dstream_room(kZstdWindowLogNarrow) + align16(sizeof(LZ4_streamDecode_t)) + align16(kLz4Ring);
}

namespace {
// The largest window decoder i may take: what the stream's version allows, within what
// its workspace holds.
int decoder_window_log(const RxCodec& c, int i) {
  int room = c.wide[i] ? kZstdWindowLogMax : kZstdWindowLogNarrow;
  return c.window_log_max < room ? c.window_log_max : room;
}
// A zstd decoder on `room` bytes at mem. A frame asking for a window larger than
// 2^window_log (at most what the workspace holds) is refused (corrupt).
void* dstream_at(void* mem, size_t room, int window_log) {
  auto* d = ZSTD_initStaticDStream(mem, room);
  return d && !ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, window_log)) ? d : nullptr;
}
}  // namespace

bool rx_codec_init(RxCodec& c, void* mem, size_t size) noexcept {
  if (size < rx_codec_size()) return false;
  auto* base = static_cast<uint8_t*>(mem);
  c = RxCodec{};
  c.lz4d = base;
  base += align16(sizeof(LZ4_streamDecode_t));
  c.lz4_ring = base;
  base += align16(kLz4Ring);
  c.window_log_max = zstd_window_log_max(kWireVersion);
  c.zbase[0] = base;
  c.dctx[0] = dstream_at(base, dstream_room(kZstdWindowLogNarrow), decoder_window_log(c, 0));
  return c.dctx[0] != nullptr;
}

void rx_codec_set_version(RxCodec& c, uint8_t version) noexcept {
  c.window_log_max = zstd_window_log_max(version);
  for (int i = 0; i < kZstdStreams; ++i)  // set before any frame of the stream: only a parameter changes
    if (c.dctx[i]) ZSTD_DCtx_setParameter(static_cast<ZSTD_DCtx*>(c.dctx[i]), ZSTD_d_windowLogMax, decoder_window_log(c, i));
}

size_t rx_codec_extra_size() noexcept { return dstream_room(kZstdWindowLogNarrow); }

bool rx_codec_attach(RxCodec& c, void* mem, size_t size) noexcept {
  if (c.dctx[1] || !mem || size < rx_codec_extra_size()) return false;
  c.zstd_open[1] = false;
  c.wide[1] = false;
  c.zbase[1] = mem;
  c.dctx[1] = dstream_at(mem, rx_codec_extra_size(), decoder_window_log(c, 1));
  return c.dctx[1] != nullptr;
}

size_t rx_codec_wide_size() noexcept { return dstream_room(kZstdWindowLogMax); }

bool rx_codec_widen(RxCodec& c, int stream, void* mem, size_t size) noexcept {
  if (stream < 0 || stream >= kZstdStreams || !mem || size < rx_codec_wide_size()) return false;
  c.zstd_open[stream] = false;
  c.wide[stream] = true;
  c.zbase[stream] = mem;
  c.dctx[stream] = dstream_at(mem, rx_codec_wide_size(), decoder_window_log(c, stream));
  return c.dctx[stream] != nullptr;
}

uint64_t zstd_frame_window(const void* src, size_t n) noexcept {
  ZSTD_frameHeader h;
  if (ZSTD_getFrameHeader(&h, src, n) != 0 || h.frameType != ZSTD_frame) return 0;
  return h.windowSize;
}

namespace {
const uint8_t* zstd_stream_decode(RxCodec& c, uint8_t flags, const void* src, size_t wire_len, uint8_t* dst,
                                  size_t raw_len) {
  int i = flags & kFlagZstd2 ? 1 : 0;
  auto* d = static_cast<ZSTD_DCtx*>(c.dctx[i]);
  if (!d) return nullptr;
  if (flags & kFlagNewStream) {
    ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
    c.zstd_open[i] = true;
  }
  if (!c.zstd_open[i]) return nullptr;
  c.zstd_open[i] = false;  // until this frame is known good
  ZSTD_inBuffer in{src, wire_len, 0};
  ZSTD_outBuffer out{dst, raw_len, 0};
  for (;;) {
    size_t in0 = in.pos, out0 = out.pos;
    size_t r = ZSTD_decompressStream(d, &out, &in);
    if (ZSTD_isError(r)) return nullptr;
    if (in.pos == in.size && out.pos == out.size) break;
    if (in.pos == in0 && out.pos == out0) return nullptr;  // stuck: too little data or too much
  }
  // Nothing more may be waiting inside the decoder: the frame decodes to exactly raw_len.
  uint8_t extra;
  ZSTD_outBuffer more{&extra, 1, 0};
  ZSTD_inBuffer none{src, 0, 0};
  if (ZSTD_isError(ZSTD_decompressStream(d, &more, &none)) || more.pos) return nullptr;
  c.zstd_open[i] = true;
  return dst;
}

const uint8_t* lz4_stream_decode(RxCodec& c, uint8_t flags, const void* src, size_t wire_len, size_t raw_len) {
  auto* st = static_cast<LZ4_streamDecode_t*>(c.lz4d);
  if (flags & kFlagNewStream) {
    LZ4_setStreamDecode(st, nullptr, 0);
    c.lz4_pos = 0;
    c.lz4_open = true;
  }
  if (!c.lz4_open || raw_len > kMaxFrameRaw) return nullptr;
  if (c.lz4_pos + raw_len > kLz4Ring) c.lz4_pos = 0;  // the sender's wrap rule
  char* at = reinterpret_cast<char*>(c.lz4_ring) + c.lz4_pos;
  int r = LZ4_decompress_safe_continue(st, static_cast<const char*>(src), at, static_cast<int>(wire_len),
                                       static_cast<int>(raw_len));
  if (r < 0 || static_cast<size_t>(r) != raw_len) {
    c.lz4_open = false;
    return nullptr;
  }
  c.lz4_pos += raw_len;
  return reinterpret_cast<uint8_t*>(at);
}
}  // namespace

const uint8_t* codec_decompress_stream(RxCodec& c, Method method, uint8_t flags, const void* src, size_t wire_len,
                                       uint8_t* dst, size_t raw_len) noexcept {
  if (raw_len == 0 || raw_len > kMaxFrameRaw || wire_len == 0) return nullptr;
  if (method == Method::Zstd) return zstd_stream_decode(c, flags, src, wire_len, dst, raw_len);
  if (method == Method::Lz4) return lz4_stream_decode(c, flags, src, wire_len, raw_len);
  return nullptr;
}

bool codec_decompress(RxCodec& c, Method method, const void* src, size_t wire_len, void* dst,
                      size_t raw_len) noexcept {
  if (raw_len > kMaxFrameRaw) return false;
  switch (method) {
    case Method::Raw:
      if (wire_len != raw_len) return false;
      std::memcpy(dst, src, raw_len);
      return true;
    case Method::Lz4: {
      int r = LZ4_decompress_safe(static_cast<const char*>(src), static_cast<char*>(dst),
                                  static_cast<int>(wire_len), static_cast<int>(raw_len));
      return r >= 0 && static_cast<size_t>(r) == raw_len;
    }
    case Method::Zstd: {
      size_t r = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(c.dctx[0]), dst, raw_len, src, wire_len);
      return !ZSTD_isError(r) && r == raw_len;
    }
  }
  return false;
}

}  // namespace bonsai::compress
