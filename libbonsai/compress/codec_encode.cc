// SPDX-License-Identifier: MIT
// The encoders (see codec.h): one-shot frames and the sender's streams (lz4's ring, up
// to two zstd streams), on fixed workspaces. zstd contexts are static
// (ZSTD_initStaticCCtx/CStream): zstd never allocates or resizes them.
#define ZSTD_STATIC_LINKING_ONLY
#include <cstring>
#include <lz4.h>
#include <zstd.h>

#include "compress/codec.h"
#include "compress/codec_params.h"

namespace bonsai::compress {
namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSampleOut = LZ4_COMPRESSBOUND(kSampleSize);

size_t align16(size_t n) { return codec_align16(n); }

// Whether the next frames get the 8 MiB window (kZstdWidenAfter).
bool zstd_wants_wide(const TxStreamCodec& c) { return c.zstd_bytes >= kZstdWidenAfter; }
// Whether slot z's next frame gets it: the frames want it and its room holds it (or
// has not been refused growing yet).
bool slot_wide(const TxStreamCodec& c, const ZstdSlot& z) { return zstd_wants_wide(c) && !z.narrow_only; }

// Starts a new zstd frame at `level` with the parameters of codec_params.h's table and
// a window of 2^window_log bytes (at most the workspace's).
bool zstd_start(ZSTD_CCtx* z, int level, bool ldm, int window_log) {
  ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
  ZstdParam params[kZstdStreamParamsMax];
  size_t n = zstd_stream_params(level, ldm, window_log, params);
  for (size_t i = 0; i < n; ++i)
    if (ZSTD_isError(ZSTD_CCtx_setParameter(z, static_cast<ZSTD_cParameter>(params[i].key), params[i].value)))
      return false;
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
  for (int lv = 1; lv <= max_zstd_level(l); ++lv) m = zstd_cstream_size(lv, wl) > m ? zstd_cstream_size(lv, wl) : m;
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
      // A libzstd whose long-distance matcher needs more than zstd_ldm_space(): without it.
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

}  // namespace bonsai::compress
