// SPDX-License-Identifier: MIT
// Compression levels (none, lz4, zstd:N) and the codecs behind them, on fixed
// workspaces: after *_init nothing allocates (zstd static contexts, lz4 extState).
// Pure: no I/O. libzstd/liblz4 are linked dynamically (docs/compression.md).
#pragma once
#include <cstddef>
#include <cstdint>

#include "compress/wire_format.h"

namespace bonsai::compress {

struct Level {
  Method method;  // Raw means "none"
  int8_t param;   // zstd level; unused otherwise
};

inline constexpr size_t kMaxLevels = 8;

struct LevelList {
  Level levels[kMaxLevels];
  uint8_t count;
};

// The default list: none, lz4, zstd:1, zstd:3, zstd:9.
LevelList levels_default() noexcept;

// Parses "none,lz4,zstd:1,zstd:3,zstd:9" (order kept; must be ordered by cost;
// "none" is added in front when missing). @return nullptr, or what is wrong.
const char* levels_parse(const char* text, LevelList& out) noexcept;

// Writes "none", "lz4" or "zstd:N" into buf (>= 12 bytes). @return buf.
const char* level_name(Level l, char* buf, size_t cap) noexcept;

// ---- Sender side ----
struct TxCodec {
  void* lz4_state;
  void* cctx;  // ZSTD_CCtx*, or nullptr if no zstd level
  int max_zstd;
};

// Workspace bytes a sender needs for `levels` (chunks up to kMaxFrameRaw).
size_t tx_codec_size(const LevelList& levels) noexcept;
// Lays the codec out in `mem` (tx_codec_size bytes, 16-aligned). @return success.
bool tx_codec_init(TxCodec& c, void* mem, size_t size, const LevelList& levels) noexcept;

// Compresses src[0..n) at `level` into dst (cap >= n).
// @return compressed size, or 0 if it failed or would not be smaller than n.
size_t codec_compress(TxCodec& c, Level level, const void* src, size_t n, void* dst, size_t cap) noexcept;

// AdOC/BlobSeer guard: runs a ~4 KiB sample of src through lz4.
// @return true if the sample shrinks enough for compression to be worth trying.
bool codec_sample_compressible(TxCodec& c, const void* src, size_t n) noexcept;

// ---- Receiver side ----
struct RxCodec {
  void* dctx;  // ZSTD_DCtx*
};

size_t rx_codec_size() noexcept;
bool rx_codec_init(RxCodec& c, void* mem, size_t size) noexcept;

// Decodes a payload of `method` into exactly raw_len bytes at dst.
// @return true on success; false on any corruption (dst contents then undefined).
bool codec_decompress(RxCodec& c, Method method, const void* src, size_t wire_len, void* dst,
                      size_t raw_len) noexcept;

}  // namespace bonsai::compress
