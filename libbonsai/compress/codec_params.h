// SPDX-License-Identifier: MIT
// The codec's tables: the default level list and the zstd parameters each stream
// frame starts with (what bounds a sender's workspace). codec_encode.cc sets exactly
// these; compress_codec_test iterates them, so a change here cannot go untested.
// Pure: no I/O, no allocation.
#pragma once
#include <cstddef>

#include "compress/codec.h"

namespace bonsai::compress {

// The default list (levels_default). Why these levels: see
// docs/notes/compression-measured.md#the-default-level-list.
inline constexpr Level kDefaultLevels[] = {
    {Method::Raw, 0}, {Method::Lz4, 0}, {Method::Zstd, 1}, {Method::Zstd, 3},
    {Method::Zstd, 5}, {Method::Zstd, 6}, {Method::Zstd, 9},
};
static_assert(sizeof kDefaultLevels / sizeof kDefaultLevels[0] <= kMaxLevels);

// The zstd levels a list may name (levels_parse).
inline constexpr int kZstdLevelMin = 1;
inline constexpr int kZstdLevelMax = 19;

// One zstd parameter: key is a ZSTD_cParameter (zstd.h is not included here).
struct ZstdParam {
  int key;
  int value;
};
// The most rows zstd_stream_params writes.
inline constexpr size_t kZstdStreamParamsMax = 16;

// The parameters a zstd stream frame at `level` starts with (after a session and
// parameter reset), in the order they are set: the level, its own parameters for a
// source of the window's size with the window 2^window_log and the match tables capped
// (kZstdHashLog, kZstdChainLog), no checksum; with `ldm`, long-distance matching
// (kLdm*) after them. @return rows written to out (kZstdStreamParamsMax room).
size_t zstd_stream_params(int level, bool ldm, int window_log, ZstdParam* out) noexcept;

// Whether zstd `level`'s stream keeps matches across its whole window (a double-fast
// or deeper strategy with the capped tables): zstd:1's single 2^14-entry table (and
// lz4's 64 KiB) lose what lies more than a few hundred KiB back, so on data that
// repeats MiBs apart such a level compresses several times better in a stream than
// a one-shot sample can show (bench/helpers/zstd_window.c: zstd:1 3.7x, zstd:3 24.9x).
// why: see docs/notes/compression-measured.md#long-repeated-text-issue-53
bool zstd_level_reaches_window(int level) noexcept;

// Bytes of zstd's long-distance matcher with our parameters (its hash table, bucket
// offsets and sequence store, each 64-aligned): libzstd's CParams estimate leaves it out.
size_t zstd_ldm_space() noexcept;

// Workspace bytes of a zstd stream at `level` with a 2^window_log window, long-distance
// matching included.
size_t zstd_cstream_size(int level, int window_log) noexcept;

// Workspace parts are laid out 16-aligned on both sides.
inline constexpr size_t codec_align16(size_t n) noexcept { return (n + 15) & ~size_t{15}; }

}  // namespace bonsai::compress
