// SPDX-License-Identifier: MIT
// The codec's tables (see codec_params.h): the default levels, their names, and the
// zstd parameters of a stream frame with the workspace they need.
#define ZSTD_STATIC_LINKING_ONLY
#include "compress/codec_params.h"

#include <cstdio>
#include <zstd.h>

namespace bonsai::compress {
namespace {

// A level's parameters for a stream: its own for a source of the window's size, with
// the window and the tables bounded (what bounds the workspace).
ZSTD_compressionParameters stream_cparams(int level) {
  ZSTD_compressionParameters cp = ZSTD_getCParams(level, size_t{1} << kZstdWindowLog, 0);
  cp.windowLog = kZstdWindowLog;
  if (cp.hashLog > kZstdHashLog) cp.hashLog = kZstdHashLog;
  if (cp.chainLog > kZstdChainLog) cp.chainLog = kZstdChainLog;
  return ZSTD_adjustCParams(cp, 0, 0);
}

}  // namespace

LevelList levels_default() noexcept {
  LevelList l{};
  for (const Level& lv : kDefaultLevels) l.levels[l.count++] = lv;
  return l;
}

const char* level_name(Level l, char* buf, size_t cap) noexcept {
  if (l.method == Method::Raw) std::snprintf(buf, cap, "none");
  else if (l.method == Method::Lz4) std::snprintf(buf, cap, "lz4");
  else std::snprintf(buf, cap, "zstd:%d", l.param);
  return buf;
}

bool zstd_level_reaches_window(int level) noexcept {
  return stream_cparams(level).strategy >= ZSTD_dfast;
}

size_t zstd_stream_params(int level, bool ldm, int window_log, ZstdParam* out) noexcept {
  // Explicit parameters: a level alone would pick tables for an unknown source size,
  // larger than the static workspace.
  ZSTD_compressionParameters cp = stream_cparams(level);
  cp.windowLog = static_cast<unsigned>(window_log);
  size_t n = 0;
  auto row = [&](ZSTD_cParameter k, int v) { out[n++] = ZstdParam{static_cast<int>(k), v}; };
  row(ZSTD_c_compressionLevel, level);
  row(ZSTD_c_windowLog, static_cast<int>(cp.windowLog));
  row(ZSTD_c_hashLog, static_cast<int>(cp.hashLog));
  row(ZSTD_c_chainLog, static_cast<int>(cp.chainLog));
  row(ZSTD_c_searchLog, static_cast<int>(cp.searchLog));
  row(ZSTD_c_minMatch, static_cast<int>(cp.minMatch));
  row(ZSTD_c_targetLength, static_cast<int>(cp.targetLength));
  row(ZSTD_c_strategy, static_cast<int>(cp.strategy));
  row(ZSTD_c_checksumFlag, 0);
  if (ldm) {
    row(ZSTD_c_enableLongDistanceMatching, 1);
    row(ZSTD_c_ldmHashLog, static_cast<int>(kLdmHashLog));
    row(ZSTD_c_ldmMinMatch, static_cast<int>(kLdmMinMatch));
    row(ZSTD_c_ldmBucketSizeLog, static_cast<int>(kLdmBucketLog));
    row(ZSTD_c_ldmHashRateLog, window_log - static_cast<int>(kLdmHashLog));
  }
  return n;
}

// One 12-byte sequence per kLdmMinMatch bytes of a 128 KiB block in the sequence store.
// compress_codec_test compares the sum with libzstd's own estimate at every level.
size_t zstd_ldm_space() noexcept {
  auto al = [](size_t n) { return (n + 63) & ~size_t{63}; };
  return al((size_t{1} << kLdmHashLog) * 8) + al(size_t{1} << (kLdmHashLog - kLdmBucketLog)) +
         al((size_t{128} * 1024 / kLdmMinMatch) * 12);
}

size_t zstd_cstream_size(int level, int window_log) noexcept {
  ZSTD_compressionParameters cp = stream_cparams(level);
  cp.windowLog = static_cast<unsigned>(window_log);
  return ZSTD_estimateCStreamSize_usingCParams(cp) + zstd_ldm_space();
}

}  // namespace bonsai::compress
