// SPDX-License-Identifier: MIT
// Codecs on fixed workspaces (see codec.h). zstd contexts are static
// (ZSTD_initStaticCCtx/DCtx): zstd never allocates or resizes them.
#define ZSTD_STATIC_LINKING_ONLY
#include "compress/codec.h"

#include <cstdio>
#include <cstring>
#include <lz4.h>
#include <utility>
#include <zstd.h>

namespace bonsai::compress {
namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSampleOut = LZ4_COMPRESSBOUND(kSampleSize);

size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

// Whether the next frames get the 8 MiB window (kZstdWidenAfter).
bool zstd_wants_wide(const TxStreamCodec& c) { return c.zstd_bytes >= kZstdWidenAfter; }
// Whether slot z's next frame gets it: the frames want it and its room holds it (or
// has not been refused growing yet).
bool slot_wide(const TxStreamCodec& c, const ZstdSlot& z) { return zstd_wants_wide(c) && !z.narrow_only; }

// A level's parameters for a stream: its own for a source of the window's size, with
// the window and the tables bounded (what bounds the workspace).
ZSTD_compressionParameters stream_cparams(int level) {
  ZSTD_compressionParameters cp = ZSTD_getCParams(level, size_t{1} << kZstdWindowLog, 0);
  cp.windowLog = kZstdWindowLog;
  if (cp.hashLog > kZstdHashLog) cp.hashLog = kZstdHashLog;
  if (cp.chainLog > kZstdChainLog) cp.chainLog = kZstdChainLog;
  return ZSTD_adjustCParams(cp, 0, 0);
}

// zstd's long-distance matcher's workspace with our parameters: its hash table
// (8-byte entries), bucket offsets, and sequence store (one 12-byte sequence per
// kLdmMinMatch bytes of a 128 KiB block), each rounded to zstd's 64-byte alignment.
// libzstd's estimate counts it only with the LDM parameters set, which the CParams
// estimate cannot carry (and a parameter object would allocate); compress_codec_test
// compares the sum with libzstd's own estimate at every level.
size_t ldm_space() {
  auto al = [](size_t n) { return (n + 63) & ~size_t{63}; };
  return al((size_t{1} << kLdmHashLog) * 8) + al(size_t{1} << (kLdmHashLog - kLdmBucketLog)) +
         al((size_t{128} * 1024 / kLdmMinMatch) * 12);
}

size_t cstream_size_for(int level, int window_log) {
  ZSTD_compressionParameters cp = stream_cparams(level);
  cp.windowLog = static_cast<unsigned>(window_log);
  return ZSTD_estimateCStreamSize_usingCParams(cp) + ldm_space();
}

// Starts a new zstd frame at `level` with explicit parameters (a level alone would
// pick tables for an unknown source size, larger than the static workspace) and a
// window of 2^window_log bytes (at most the workspace's).
bool zstd_start(ZSTD_CCtx* z, int level, bool ldm, int window_log) {
  ZSTD_compressionParameters cp = stream_cparams(level);
  cp.windowLog = static_cast<unsigned>(window_log);
  ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
  const std::pair<ZSTD_cParameter, int> params[] = {
      {ZSTD_c_compressionLevel, level},
      {ZSTD_c_windowLog, static_cast<int>(cp.windowLog)},
      {ZSTD_c_hashLog, static_cast<int>(cp.hashLog)},
      {ZSTD_c_chainLog, static_cast<int>(cp.chainLog)},
      {ZSTD_c_searchLog, static_cast<int>(cp.searchLog)},
      {ZSTD_c_minMatch, static_cast<int>(cp.minMatch)},
      {ZSTD_c_targetLength, static_cast<int>(cp.targetLength)},
      {ZSTD_c_strategy, static_cast<int>(cp.strategy)},
      {ZSTD_c_checksumFlag, 0},
  };
  for (const auto& [k, v] : params)
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z, k, v))) return false;
  if (!ldm) return true;
  const std::pair<ZSTD_cParameter, int> long_params[] = {
      {ZSTD_c_enableLongDistanceMatching, 1},
      {ZSTD_c_ldmHashLog, static_cast<int>(kLdmHashLog)},
      {ZSTD_c_ldmMinMatch, static_cast<int>(kLdmMinMatch)},
      {ZSTD_c_ldmBucketSizeLog, static_cast<int>(kLdmBucketLog)},
      {ZSTD_c_ldmHashRateLog, window_log - static_cast<int>(kLdmHashLog)},
  };
  for (const auto& [k, v] : long_params)
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z, k, v))) return false;
  return true;
}

size_t cctx_size_for(int level) {
  return ZSTD_estimateCCtxSize_usingCParams(ZSTD_getCParams(level, kMaxFrameRaw, 0));
}

int max_zstd_level(const LevelList& l) {
  int m = 0;
  for (unsigned i = 0; i < l.count; ++i)
    if (l.levels[i].method == Method::Zstd && l.levels[i].param > m) m = l.levels[i].param;
  return m;
}

}  // namespace

LevelList levels_default() noexcept {
  LevelList l{};
  l.levels[0] = {Method::Raw, 0};
  l.levels[1] = {Method::Lz4, 0};
  l.levels[2] = {Method::Zstd, 1};
  l.levels[3] = {Method::Zstd, 3};
  l.levels[4] = {Method::Zstd, 5};
  l.levels[5] = {Method::Zstd, 6};
  l.levels[6] = {Method::Zstd, 9};
  l.count = 7;
  return l;
}

const char* level_name(Level l, char* buf, size_t cap) noexcept {
  if (l.method == Method::Raw) std::snprintf(buf, cap, "none");
  else if (l.method == Method::Lz4) std::snprintf(buf, cap, "lz4");
  else std::snprintf(buf, cap, "zstd:%d", l.param);
  return buf;
}

size_t tx_codec_size(const LevelList& levels) noexcept {
  size_t n = align16(static_cast<size_t>(LZ4_sizeofState()));
  int z = max_zstd_level(levels);
  if (z > 0) {
    size_t m = 0;
    for (int lv = 1; lv <= z; ++lv) m = cctx_size_for(lv) > m ? cctx_size_for(lv) : m;
    n += align16(m);
  }
  return n;
}

bool tx_codec_init(TxCodec& c, void* mem, size_t size, const LevelList& levels) noexcept {
  if (size < tx_codec_size(levels)) return false;
  auto* base = static_cast<char*>(mem);
  size_t lz4 = align16(static_cast<size_t>(LZ4_sizeofState()));
  c.lz4_state = base;
  c.max_zstd = max_zstd_level(levels);
  c.cctx = nullptr;
  if (c.max_zstd > 0) {
    size_t room = size - lz4;
    c.cctx = ZSTD_initStaticCCtx(base + lz4, room);
    if (!c.cctx) return false;
  }
  return true;
}

size_t codec_compress(TxCodec& c, Level level, const void* src, size_t n, void* dst, size_t cap) noexcept {
  if (n == 0 || n > kMaxFrameRaw) return 0;
  size_t out = 0;
  if (level.method == Method::Lz4) {
    int r = LZ4_compress_fast_extState(c.lz4_state, static_cast<const char*>(src), static_cast<char*>(dst),
                                       static_cast<int>(n), static_cast<int>(cap), 1);
    out = r > 0 ? static_cast<size_t>(r) : 0;
  } else if (level.method == Method::Zstd && c.cctx && level.param <= c.max_zstd) {
    size_t r = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(c.cctx), dst, cap, src, n, level.param);
    out = ZSTD_isError(r) ? 0 : r;
  }
  return out < n ? out : 0;
}

bool codec_sample_compressible(TxCodec& c, const void* src, size_t n) noexcept {
  if (n <= kSampleSize) return true;  // small: just try
  const char* s = static_cast<const char*>(src) + (n - kSampleSize) / 2;
  char out[kSampleOut];
  int r = LZ4_compress_fast_extState(c.lz4_state, s, out, static_cast<int>(kSampleSize),
                                     static_cast<int>(sizeof out), 1);
  return r > 0 && static_cast<size_t>(r) < kSampleSize * 9 / 10;
}

namespace {
size_t zstd_stream_room(const LevelList& l, bool wide) {
  int wl = wide ? kZstdWindowLog : kZstdWindowLogNarrow;
  size_t m = 0;
  for (int lv = 1; lv <= max_zstd_level(l); ++lv) m = cstream_size_for(lv, wl) > m ? cstream_size_for(lv, wl) : m;
  return align16(m);
}
// Slot z's static context on its room.
bool slot_init(ZstdSlot& z, void* mem, size_t room) {
  z = ZstdSlot{};
  z.base = mem;
  z.room = room & ~size_t{15};
  z.zcs = ZSTD_initStaticCStream(mem, z.room);
  return z.zcs != nullptr;
}
size_t dstream_room(int window_log) { return align16(ZSTD_estimateDStreamSize(size_t{1} << window_log)); }
}  // namespace

size_t tx_stream_codec_size(const LevelList& levels, bool wide) noexcept {
  size_t n = align16(sizeof(LZ4_stream_t)) + align16(static_cast<size_t>(LZ4_sizeofState())) + align16(kLz4Ring);
  return n + (max_zstd_level(levels) > 0 ? zstd_stream_room(levels, wide) : 0);
}

bool tx_stream_codec_init(TxStreamCodec& c, void* mem, size_t size, const LevelList& levels) noexcept {
  if (size < tx_stream_codec_size(levels, false)) return false;
  auto* base = static_cast<uint8_t*>(mem);
  c = TxStreamCodec{};
  c.lz4 = base;
  base += align16(sizeof(LZ4_stream_t));
  c.lz4_sample = base;
  base += align16(static_cast<size_t>(LZ4_sizeofState()));
  c.lz4_ring = base;
  base += align16(kLz4Ring);
  c.max_zstd = max_zstd_level(levels);
  if (c.max_zstd > 0) {
    c.wide_room = zstd_stream_room(levels, true);
    size_t used = static_cast<size_t>(base - static_cast<uint8_t*>(mem));
    if (!slot_init(c.zs[0], base, size - used)) return false;
    c.nzstd = 1;
  }
  return true;
}

size_t tx_stream_codec_extra_size(const LevelList& levels, bool wide) noexcept {
  unsigned n = 0;
  for (unsigned i = 0; i < levels.count; ++i)
    if (levels.levels[i].method == Method::Zstd) ++n;
  return n >= 2 ? zstd_stream_room(levels, wide) : 0;
}

bool tx_stream_codec_attach(TxStreamCodec& c, void* mem, size_t size, const LevelList& levels) noexcept {
  size_t need = tx_stream_codec_extra_size(levels, false);
  if (c.nzstd != 1 || need == 0 || size < need || !mem) return false;
  if (!slot_init(c.zs[1], mem, size)) return false;
  c.nzstd = 2;
  return true;
}

bool stream_zstd_new_frame(const TxStreamCodec& c, int level) noexcept {
  for (int i = 0; i < c.nzstd; ++i)
    if (c.zs[i].level == level && c.zs[i].ldm == c.want_ldm && c.zs[i].wide == slot_wide(c, c.zs[i])) return false;
  return true;
}

namespace {
size_t lz4_stream(TxStreamCodec& c, const void* src, size_t n, void* dst, size_t cap, uint8_t* flags) {
  auto* st = static_cast<LZ4_stream_t*>(c.lz4);
  if (!c.lz4_open) {
    LZ4_initStream(st, sizeof(LZ4_stream_t));
    c.lz4_pos = 0;
    c.lz4_open = true;
    *flags |= kFlagNewStream;
  }
  // History must stay where it was compressed: the input goes through the ring, with
  // the same wrap rule as the receiver's (codec_decompress_stream).
  if (c.lz4_pos + n > kLz4Ring) c.lz4_pos = 0;
  char* in = reinterpret_cast<char*>(c.lz4_ring) + c.lz4_pos;
  std::memcpy(in, src, n);
  int r = LZ4_compress_fast_continue(st, in, static_cast<char*>(dst), static_cast<int>(n), static_cast<int>(cap), 1);
  if (r <= 0) {
    c.lz4_open = false;
    return 0;
  }
  c.lz4_pos += n;
  return static_cast<size_t>(r);
}

// The zstd stream a chunk at `level` goes to: the one open at it, else the one unused
// longest (a closed one first), started afresh at that level.
int zstd_slot_for(const TxStreamCodec& c, int level) {
  int pick = -1;
  for (int i = 0; i < c.nzstd; ++i) {
    const ZstdSlot& z = c.zs[i];
    if (z.level == level && z.ldm == c.want_ldm) return i;
    if (pick < 0 || (z.level == 0) > (c.zs[pick].level == 0) ||
        ((z.level == 0) == (c.zs[pick].level == 0) && z.used < c.zs[pick].used))
      pick = i;
  }
  return pick;
}

size_t zstd_stream(TxStreamCodec& c, int level, const void* src, size_t n, void* dst, size_t cap, uint8_t* flags) {
  if (c.nzstd == 0 || level < 1 || level > c.max_zstd) return 0;
  int i = zstd_slot_for(c, level);
  ZstdSlot& s = c.zs[i];
  auto* z = static_cast<ZSTD_CCtx*>(s.zcs);
  // The 8 MiB window needs the wide room: grown in place, once, when first wanted; if
  // it cannot grow, this stream goes on with 2 MiB frames (no new frame for that).
  if (slot_wide(c, s) && s.room < c.wide_room) {
    void* wider = c.grow.fn && c.grow.fn(c.grow.ctx, s.base, c.wide_room)
                      ? ZSTD_initStaticCStream(s.base, c.wide_room) : nullptr;
    if (wider) {  // the context is re-made on the larger room: a new frame
      s.zcs = wider;
      s.room = c.wide_room;
      s.level = 0;
      z = static_cast<ZSTD_CCtx*>(s.zcs);
    } else {
      s.narrow_only = true;
    }
  }
  bool wide = slot_wide(c, s);
  if (s.level != level || s.ldm != c.want_ldm || s.wide != wide) {
    s.level = 0;
    int window_log = wide ? kZstdWindowLog : kZstdWindowLogNarrow;
    if (!zstd_start(z, level, c.want_ldm, window_log)) {
      if (!c.want_ldm) return 0;
      c.ldm_failed = true, c.want_ldm = false;  // a libzstd that refuses our LDM parameters
      if (!zstd_start(z, level, false, window_log)) return 0;
    }
    s.level = level;
    s.ldm = c.want_ldm;
    s.wide = wide;
    *flags |= kFlagNewStream;
  }
  if (i == 1) *flags |= kFlagZstd2;
  s.used = ++c.zstd_chunks;
  ZSTD_inBuffer in{src, n, 0};
  ZSTD_outBuffer out{dst, cap, 0};
  for (;;) {
    size_t r = ZSTD_compressStream2(z, &out, &in, ZSTD_e_flush);
    if (ZSTD_isError(r) || (r && out.pos == out.size)) {  // cannot happen with cap's bound: start afresh
      s.level = 0;
      // A libzstd whose long-distance matcher needs more than ldm_space(): without it.
      if (s.ldm) c.ldm_failed = true, c.want_ldm = false;
      *flags = 0;
      return 0;
    }
    if (r == 0) {
      c.zstd_bytes += n;
      return out.pos;
    }
  }
}
}  // namespace

size_t stream_compress(TxStreamCodec& c, Level level, const void* src, size_t n, void* dst, size_t cap,
                       uint8_t* flags) noexcept {
  *flags = 0;
  if (n == 0 || n > kMaxFrameRaw || cap < frame_wire_bound(static_cast<uint32_t>(n))) return 0;
  if (level.method == Method::Lz4) return lz4_stream(c, src, n, dst, cap, flags);
  if (level.method == Method::Zstd) return zstd_stream(c, level.param, src, n, dst, cap, flags);
  return 0;
}

bool stream_sample_compressible(TxStreamCodec& c, const void* src, size_t n, unsigned keep_pct) noexcept {
  if (n <= kSampleSize) return true;  // small: just try
  const char* s = static_cast<const char*>(src) + (n - kSampleSize) / 2;
  char out[kSampleOut];
  int r = LZ4_compress_fast_extState(c.lz4_sample, s, out, static_cast<int>(kSampleSize),
                                     static_cast<int>(sizeof out), 1);
  return r > 0 && static_cast<size_t>(r) * 100 < kSampleSize * keep_pct;
}

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
