// SPDX-License-Identifier: MIT
// Unit tests for libbonsai/compress: wire format headers, level lists, codecs on
// fixed workspaces, the incompressible-data sample, and the codec's tables
// (codec_params.h: the default levels, each zstd level's stream parameters).
#define ZSTD_STATIC_LINKING_ONLY
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <lz4.h>
#include <utility>
#include <zstd.h>

#include "compress/codec.h"
#include "compress/codec_params.h"
#include "compress/wire_format.h"
#include "compress_test_util.h"
#include "runtime/options.h"

using namespace bonsai::compress;

TEST_CASE("frame headers round-trip and reject invalid fields", "[compress]") {
  uint8_t b[kFrameHeaderSize];
  FrameHeader h{Method::Zstd, 1000, 400}, g{};
  frame_header_write(b, h);
  REQUIRE(frame_header_parse(b, g));
  CHECK((g.method == Method::Zstd && g.raw_len == 1000 && g.wire_len == 400));
  // v1 (self-contained frames): a compressed frame is strictly smaller than its data.
  // v2 (streams): it may exceed it by the bound, and may carry kFlagNewStream.
  // v3: as v2, and a zstd frame may carry kFlagZstd2 (the second zstd stream).
  struct Case { Method m; uint32_t raw, wire; uint8_t flags; bool ok_v1, ok_v2, ok_v3; } cases[] = {
      {Method::Raw, 10, 10, 0, true, true, true},
      {Method::Raw, 10, 9, 0, false, false, false},
      {Method::Raw, 10, 10, kFlagNewStream, false, false, false},
      {Method::Lz4, 10, 10, 0, false, true, true},
      {Method::Lz4, 10, frame_wire_bound(10), 0, false, true, true},
      {Method::Lz4, 10, frame_wire_bound(10) + 1, 0, false, false, false},
      {Method::Lz4, 10, 0, 0, false, false, false},
      {Method::Zstd, 0, 0, 0, false, false, false},
      {Method::Raw, kMaxFrameRaw + 1, kMaxFrameRaw + 1, 0, false, false, false},
      {Method::Lz4, kMaxFrameRaw, 5, 0, true, true, true},
      {Method::Zstd, 100, 50, kFlagNewStream, false, true, true},
      {Method::Zstd, 100, 50, kFlagZstd2, false, false, true},
      {Method::Zstd, 100, 50, kFlagZstd2 | kFlagNewStream, false, false, true},
      {Method::Lz4, 100, 50, kFlagZstd2, false, false, false},
      {Method::Raw, 100, 100, kFlagZstd2, false, false, false},
      {Method::Zstd, 100, 50, 4, false, false, false},
  };
  static_assert(kWireVersion == 4 && kWireVersionNarrow == 3 && kWireVersionOne == 2);
  for (const auto& c : cases) {
    frame_header_write(b, FrameHeader{c.m, c.raw, c.wire, c.flags});
    CHECK(frame_header_parse(b, g, kWireVersionOld) == c.ok_v1);
    CHECK(frame_header_parse(b, g, kWireVersionOne) == c.ok_v2);
    CHECK(frame_header_parse(b, g, kWireVersionNarrow) == c.ok_v3);
    CHECK(frame_header_parse(b, g, kWireVersion) == c.ok_v3);  // v4 changes the window only
  }
  CHECK(frame_wire_bound(static_cast<uint32_t>(kMaxFrameRaw)) == kMaxFrameWire);
  frame_header_write(b, h);
  b[0] = 7;
  CHECK_FALSE(frame_header_parse(b, g));
  frame_header_write(b, h);
  b[2] = 1;
  CHECK_FALSE(frame_header_parse(b, g));
}

TEST_CASE("stream header recognition", "[compress]") {
  uint8_t s[kStreamHeaderSize];
  stream_header_write(s);
  CHECK(stream_header_match(s, 8) == HeaderMatch::Yes);
  CHECK(stream_header_match(s, 3) == HeaderMatch::Prefix);
  for (uint8_t v = 1; v <= 4; ++v) {  // what this decoder knows
    s[7] = v;
    CHECK(stream_header_match(s, 8) == HeaderMatch::Yes);
  }
  for (uint8_t v : {uint8_t{0}, uint8_t{5}, uint8_t{9}}) {
    s[7] = v;
    CHECK(stream_header_match(s, 8) == HeaderMatch::BadVersion);
  }
  CHECK(zstd_window_log_max(4) == 23);  // 8 MiB from v4 on, 2 MiB before
  CHECK(zstd_window_log_max(3) == 21);
  CHECK(zstd_window_log_max(1) == 21);
  const uint8_t http[] = "GET / HTTP/1.1";
  CHECK(stream_header_match(http, 8) == HeaderMatch::No);
}

TEST_CASE("the documented default level list is the one the library uses", "[compress]") {
  // runtime/options.h's row (what docs/reference/limits.md and the man page say) and
  // levels_default() (what a connection gets) must not drift apart.
  LevelList documented{}, used = levels_default();
  REQUIRE(levels_parse(bonsai::option_row(bonsai::Opt::compress_levels).def, documented) == nullptr);
  REQUIRE(documented.count == used.count);
  for (uint8_t i = 0; i < used.count; ++i) {
    CHECK(documented.levels[i].method == used.levels[i].method);
    CHECK(documented.levels[i].param == used.levels[i].param);
  }
}

TEST_CASE("level lists parse, keep order, put none first", "[compress]") {
  LevelList l{};
  REQUIRE(levels_parse("none,lz4,zstd:1,zstd:3,zstd:9", l) == nullptr);
  REQUIRE(l.count == 5);
  CHECK(l.levels[0].method == Method::Raw);
  CHECK((l.levels[4].method == Method::Zstd && l.levels[4].param == 9));
  REQUIRE(levels_parse("zstd:5", l) == nullptr);
  CHECK((l.count == 2 && l.levels[0].method == Method::Raw));
  CHECK(levels_parse("zstd:0", l) != nullptr);
  CHECK(levels_parse("zstd:20", l) != nullptr);
  CHECK(levels_parse("gzip", l) != nullptr);
  CHECK(levels_parse("lz4,none", l) != nullptr);
  char buf[16];
  CHECK(std::string(level_name(Level{Method::Zstd, 3}, buf, sizeof buf)) == "zstd:3");
}

TEST_CASE("every level compresses and decodes exactly on fixed workspaces", "[compress]") {
  LevelList l{};
  REQUIRE(levels_parse("none,lz4,zstd:1,zstd:3,zstd:9,zstd:19", l) == nullptr);
  compress_test::Workspace tw(tx_codec_size(l)), rw(rx_codec_size());
  TxCodec tx{};
  RxCodec rx{};
  REQUIRE(tx_codec_init(tx, tw.mem, tw.size, l));
  REQUIRE(rx_codec_init(rx, rw.mem, rw.size));
  std::mt19937 rng(7);
  std::vector<uint8_t> text(kMaxFrameRaw), out(kMaxFrameRaw), back(kMaxFrameRaw);
  compress_test::fill_text(rng, text.data(), text.size());
  for (unsigned i = 1; i < l.count; ++i) {
    for (size_t n : {size_t{1500}, size_t{70000}, kMaxFrameRaw}) {
      size_t c = codec_compress(tx, l.levels[i], text.data(), n, out.data(), out.size());
      REQUIRE(c > 0);
      CHECK(c < n / 2);
      REQUIRE(codec_decompress(rx, l.levels[i].method, out.data(), c, back.data(), n));
      CHECK(std::memcmp(back.data(), text.data(), n) == 0);
      // One flipped byte: an error or the exact bytes, never a crash.
      out[c / 2] ^= 0x5a;
      if (codec_decompress(rx, l.levels[i].method, out.data(), c, back.data(), n))
        SUCCEED("corruption not detectable in this payload");
      CHECK_FALSE(codec_decompress(rx, l.levels[i].method, out.data(), c - 1, back.data(), n));
    }
  }
}

TEST_CASE("random bytes are sampled as incompressible, text as compressible", "[compress]") {
  LevelList l = levels_default();
  compress_test::Workspace tw(tx_codec_size(l));
  TxCodec tx{};
  REQUIRE(tx_codec_init(tx, tw.mem, tw.size, l));
  std::mt19937 rng(3);
  std::vector<uint8_t> noise(65536), text(65536);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  compress_test::fill_text(rng, text.data(), text.size());
  CHECK_FALSE(codec_sample_compressible(tx, noise.data(), noise.size()));
  CHECK(codec_sample_compressible(tx, text.data(), text.size()));
  std::vector<uint8_t> out(65536);
  CHECK(codec_compress(tx, Level{Method::Zstd, 3}, noise.data(), noise.size(), out.data(), out.size()) == 0);
}

TEST_CASE("the default level list: none first, ordered by cost, every level valid", "[compress][codec_table]") {
  // codec_params.h's table, which levels_default() copies.
  LevelList used = levels_default();
  REQUIRE(used.count == sizeof kDefaultLevels / sizeof kDefaultLevels[0]);
  REQUIRE(used.count >= 2);
  CHECK(kDefaultLevels[0].method == Method::Raw);
  for (uint8_t i = 0; i < used.count; ++i) {
    const Level& lv = kDefaultLevels[i];
    INFO("level " << int{i});
    CHECK((used.levels[i].method == lv.method && used.levels[i].param == lv.param));
    if (lv.method == Method::Zstd) CHECK((lv.param >= kZstdLevelMin && lv.param <= kZstdLevelMax));
    if (i == 0) continue;
    const Level& prev = kDefaultLevels[i - 1];  // by cost: none < lz4 < zstd, zstd by level
    CHECK(static_cast<int>(lv.method) >= static_cast<int>(prev.method));
    if (lv.method == Method::Zstd && prev.method == Method::Zstd) CHECK(lv.param > prev.param);
    CHECK(lv.method != Method::Raw);
  }
  // The grammar accepts exactly the table's zstd range.
  LevelList l{};
  char text[16];
  std::snprintf(text, sizeof text, "zstd:%d", kZstdLevelMin);
  CHECK(levels_parse(text, l) == nullptr);
  std::snprintf(text, sizeof text, "zstd:%d", kZstdLevelMax);
  CHECK(levels_parse(text, l) == nullptr);
  std::snprintf(text, sizeof text, "zstd:%d", kZstdLevelMin - 1);
  CHECK(levels_parse(text, l) != nullptr);
  std::snprintf(text, sizeof text, "zstd:%d", kZstdLevelMax + 1);
  CHECK(levels_parse(text, l) != nullptr);
}

namespace {
// A stream parameter row's value by key; -1 if the table has no such row.
int param_of(const ZstdParam* p, size_t n, ZSTD_cParameter key) {
  for (size_t i = 0; i < n; ++i)
    if (p[i].key == static_cast<int>(key)) return p[i].value;
  return -1;
}
}  // namespace

TEST_CASE("every zstd level's stream parameters: bounded tables, no checksum, the workspace holds them",
          "[compress][codec_table]") {
  // Iterates codec_params.h's table itself (what zstd_start sets), at every level a
  // list may name, both windows, with and without long-distance matching.
  auto a16 = [](size_t n) { return (n + 15) & ~size_t{15}; };
  size_t lz4 = a16(sizeof(LZ4_stream_t)) + a16(static_cast<size_t>(LZ4_sizeofState())) + a16(kLz4Ring);
  for (int level = kZstdLevelMin; level <= kZstdLevelMax; ++level) {
    LevelList l{};
    l.levels[0] = {Method::Raw, 0};
    l.levels[1] = {Method::Zstd, static_cast<int8_t>(level)};
    l.count = 2;
    for (int window_log : {kZstdWindowLogNarrow, kZstdWindowLog}) {
      size_t need = 0;
      for (bool ldm : {false, true}) {
        INFO("zstd:" << level << " window 2^" << window_log << (ldm ? " with LDM" : ""));
        ZstdParam p[kZstdStreamParamsMax];
        size_t n = zstd_stream_params(level, ldm, window_log, p);
        REQUIRE(n <= kZstdStreamParamsMax);
        for (size_t i = 0; i < n; ++i) {
          for (size_t j = i + 1; j < n; ++j) CHECK(p[i].key != p[j].key);  // each parameter once
          ZSTD_bounds b = ZSTD_cParam_getBounds(static_cast<ZSTD_cParameter>(p[i].key));
          REQUIRE_FALSE(ZSTD_isError(b.error));
          CHECK((p[i].value >= b.lowerBound && p[i].value <= b.upperBound));
        }
        CHECK(p[0].key == static_cast<int>(ZSTD_c_compressionLevel));  // first: the others override it
        CHECK(p[0].value == level);
        CHECK(param_of(p, n, ZSTD_c_windowLog) == window_log);
        CHECK(param_of(p, n, ZSTD_c_hashLog) > 0);
        CHECK(param_of(p, n, ZSTD_c_hashLog) <= static_cast<int>(kZstdHashLog));
        CHECK(param_of(p, n, ZSTD_c_chainLog) > 0);
        CHECK(param_of(p, n, ZSTD_c_chainLog) <= static_cast<int>(kZstdChainLog));
        for (ZSTD_cParameter k : {ZSTD_c_searchLog, ZSTD_c_minMatch, ZSTD_c_targetLength, ZSTD_c_strategy})
          CHECK(param_of(p, n, k) >= 0);
        CHECK(param_of(p, n, ZSTD_c_checksumFlag) == 0);  // docs/reference/wire-format.md: no checksum
        CHECK(param_of(p, n, ZSTD_c_enableLongDistanceMatching) == (ldm ? 1 : -1));
        if (ldm) {
          CHECK(param_of(p, n, ZSTD_c_ldmHashLog) == static_cast<int>(kLdmHashLog));
          CHECK(param_of(p, n, ZSTD_c_ldmMinMatch) == static_cast<int>(kLdmMinMatch));
          CHECK(param_of(p, n, ZSTD_c_ldmBucketSizeLog) == static_cast<int>(kLdmBucketLog));
          CHECK(param_of(p, n, ZSTD_c_ldmHashRateLog) == window_log - static_cast<int>(kLdmHashLog));
        }
        // libzstd's own estimate of a stream with exactly these parameters.
        ZSTD_CCtx_params* cp = ZSTD_createCCtxParams();
        REQUIRE(cp);
        for (size_t i = 0; i < n; ++i)
          REQUIRE_FALSE(ZSTD_isError(ZSTD_CCtxParams_setParameter(cp, static_cast<ZSTD_cParameter>(p[i].key), p[i].value)));
        size_t est = ZSTD_estimateCStreamSize_usingCCtxParams(cp);
        ZSTD_freeCCtxParams(cp);
        CHECK(est <= zstd_cstream_size(level, window_log));
        need = est > need ? est : need;
      }
      // The sender's workspace for that window (the first zstd stream's room last).
      CHECK(tx_stream_codec_size(l, window_log == kZstdWindowLog) >= lz4 + a16(need));
      CHECK(tx_stream_codec_extra_size(l, window_log == kZstdWindowLog) == 0);  // one zstd level: one stream
    }
  }
}

TEST_CASE("a static zstd stream on the computed room takes the table's parameters and compresses",
          "[compress][codec_table]") {
  // The workspace is sized by zstd_cstream_size; the context is made the way the
  // encoder makes it, with every row of the table set, at every level, LDM on.
  std::mt19937 rng(5);
  std::vector<uint8_t> text(kMaxFrameRaw), out(kMaxFrameWire);
  compress_test::fill_text(rng, text.data(), text.size());
  compress_test::Workspace ws(zstd_cstream_size(kZstdLevelMax, kZstdWindowLog) + 64);
  for (int level = kZstdLevelMin; level <= kZstdLevelMax; ++level) {
    INFO("zstd:" << level);
    size_t room = zstd_cstream_size(level, kZstdWindowLog);
    REQUIRE(room <= ws.size);
    ZSTD_CStream* z = ZSTD_initStaticCStream(ws.mem, room);
    REQUIRE(z);
    ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
    ZstdParam p[kZstdStreamParamsMax];
    size_t n = zstd_stream_params(level, true, kZstdWindowLog, p);
    for (size_t i = 0; i < n; ++i)
      REQUIRE_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(z, static_cast<ZSTD_cParameter>(p[i].key), p[i].value)));
    ZSTD_inBuffer in{text.data(), text.size(), 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    size_t r = ZSTD_compressStream2(z, &o, &in, ZSTD_e_flush);
    REQUIRE_FALSE(ZSTD_isError(r));
    CHECK(r == 0);
    CHECK(in.pos == in.size);
    CHECK(o.pos < text.size() / 2);
  }
}
