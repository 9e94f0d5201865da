// SPDX-License-Identifier: MIT
// Codecs on fixed workspaces (see codec.h). zstd contexts are static
// (ZSTD_initStaticCCtx/DCtx): zstd never allocates or resizes them.
#define ZSTD_STATIC_LINKING_ONLY
#include "compress/codec.h"

#include <cstdio>
#include <cstring>
#include <lz4.h>
#include <zstd.h>

namespace bonsai::compress {
namespace {

constexpr size_t kSampleSize = 4096;
constexpr size_t kSampleOut = LZ4_COMPRESSBOUND(kSampleSize);

size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

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
  l.levels[4] = {Method::Zstd, 9};
  l.count = 5;
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

size_t rx_codec_size() noexcept { return align16(ZSTD_estimateDCtxSize()); }

bool rx_codec_init(RxCodec& c, void* mem, size_t size) noexcept {
  c.dctx = ZSTD_initStaticDCtx(mem, size);
  return c.dctx != nullptr;
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
      size_t r = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(c.dctx), dst, raw_len, src, wire_len);
      return !ZSTD_isError(r) && r == raw_len;
    }
  }
  return false;
}

}  // namespace bonsai::compress
