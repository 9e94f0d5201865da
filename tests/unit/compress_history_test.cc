// SPDX-License-Identifier: MIT
// Wire v2: codec streams with history across frames (compress/codec.h). Round trips
// byte-exact with tiny and huge writes on lz4 and zstd streams, level switches in the
// middle of a stream, v1 streams still decoded, and damaged v2 frames (flags, lengths,
// windows too large, truncation) refused with ECONNRESET, never handed out.
#define ZSTD_STATIC_LINKING_ONLY
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unistd.h>
#include <zstd.h>

#include "compress/calibrator.h"
#include "compress/rx_stream.h"
#include "compress/tx_stream.h"
#include "compress/wire_format.h"
#include "compress_stream_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {

auto fixed(uint8_t l) {
  return [l](unsigned) { return l; };
}

}  // namespace

TEST_CASE("v2 streams: tiny writes compress with history, byte-exact", "[compress]") {
  auto data = text(1, 1 << 20);
  for (uint8_t level : {uint8_t{1}, uint8_t{2}, uint8_t{5}}) {  // lz4, zstd:1, zstd:9
    for (size_t size : {size_t{100}, size_t{2048}}) {
      Tx t(level == 1 ? "fixed:lz4" : level == 2 ? "fixed:zstd:1" : "fixed:zstd:9");
      auto wire = encode(t, data, [size](unsigned) { return size; }, fixed(level));
      int err;
      auto got = decode(wire, &err);
      CHECK(err == 0);
      CHECK((got == data));
      // Self-contained frames (wire v1) of these writes: the baseline history must beat.
      LevelList l = levels_default();
      Workspace cws(tx_codec_size(l));
      TxCodec one{};
      REQUIRE(tx_codec_init(one, cws.mem, cws.size, l));
      std::vector<uint8_t> out(kMaxFrameWire);
      size_t v1 = 0;
      for (size_t pos = 0; pos < data.size(); pos += size) {
        size_t n = size < data.size() - pos ? size : data.size() - pos;
        size_t c = codec_compress(one, l.levels[level], &data[pos], n, out.data(), out.size());
        v1 += kFrameHeaderSize + (c ? c : n);
      }
      double ratio = static_cast<double>(data.size()) / static_cast<double>(wire.size());
      double ratio_v1 = static_cast<double>(data.size()) / static_cast<double>(v1);
      INFO("level " << int(level) << ", writes of " << size << " B: ratio " << ratio << ", self-contained " << ratio_v1);
      CHECK(ratio > ratio_v1 * (size == 100 ? 1.3 : 1.15));  // random words: little to find in history
      CHECK(ratio > (size == 100 ? 1.6 : 2.3));
    }
  }
}

TEST_CASE("v2 streams: huge and mixed writes, level switches mid-stream", "[compress]") {
  auto data = mixed_data(7, 12 << 20);
  std::mt19937 rng(3);
  std::vector<size_t> sizes(100000);
  for (auto& s : sizes) s = log_size(rng, 4 << 20);
  // Levels cycle through none, lz4, zstd:1, zstd:3, zstd:6, zstd:9 and back, every few calls.
  auto cycle = [](unsigned call) {
    static const uint8_t order[] = {5, 2, 1, 3, 0, 4, 1, 2, 5, 3};
    return order[(call / 3) % sizeof order];
  };
  Tx t("fixed:zstd:3");
  auto wire = encode(t, data, [&](unsigned c) { return sizes[c % sizes.size()]; }, cycle);
  int err;
  for (size_t rs : {size_t{1} << 20, size_t{777}}) {
    auto got = decode(wire, &err, rs);
    CHECK(err == 0);
    CHECK((got == data));
  }
  CHECK(t.tx.frames[static_cast<int>(Method::Lz4)] > 0);
  CHECK(t.tx.frames[static_cast<int>(Method::Zstd)] > 0);
}

TEST_CASE("v1 streams (self-contained frames) still decode", "[compress]") {
  LevelList l = levels_default();
  Workspace cws(tx_codec_size(l));
  TxCodec codec{};
  REQUIRE(tx_codec_init(codec, cws.mem, cws.size, l));
  auto data = mixed_data(9, 3 << 20);
  std::vector<uint8_t> wire(kStreamHeaderSize), out(kMaxFrameRaw);
  stream_header_write(wire.data(), kWireVersionOld);
  std::mt19937 rng(5);
  for (size_t pos = 0; pos < data.size();) {
    size_t n = log_size(rng, kMaxFrameRaw);
    if (n > data.size() - pos) n = data.size() - pos;
    Level lv = l.levels[rng() % l.count];
    size_t c = lv.method == Method::Raw ? 0 : codec_compress(codec, lv, &data[pos], n, out.data(), out.size());
    FrameHeader h{c ? lv.method : Method::Raw, static_cast<uint32_t>(n), static_cast<uint32_t>(c ? c : n)};
    uint8_t hb[kFrameHeaderSize];
    frame_header_write(hb, h);
    wire.insert(wire.end(), hb, hb + sizeof hb);
    const uint8_t* p = c ? out.data() : &data[pos];
    wire.insert(wire.end(), p, p + h.wire_len);
    pos += n;
  }
  int err;
  CHECK((decode(wire, &err) == data));
  CHECK(err == 0);
  // A v1 stream may not use v2's flags.
  auto bad = wire;
  bad[frames_of(bad)[0] + 1] = kFlagNewStream;
  decode(bad, &err);
  CHECK(err == ECONNRESET);
}

TEST_CASE("damaged v2 frames are refused, never handed out", "[compress]") {
  auto data = text(2, 600000);
  for (uint8_t level : {uint8_t{1}, uint8_t{3}}) {  // lz4, zstd:3
    Tx t("fixed:zstd:3");
    auto wire = encode(t, data, [](unsigned c) { return 1000 + c % 5000; }, fixed(level));
    auto at = frames_of(wire);
    REQUIRE(at.size() > 10);
    REQUIRE(wire[at[0] + 1] == kFlagNewStream);
    REQUIRE(wire[at[1] + 1] == 0);
    int err;
    auto truth = decode(wire, &err);
    REQUIRE(err == 0);
    REQUIRE((truth == data));
    auto check_bad = [&](std::vector<uint8_t> bad) {
      auto got = decode(bad, &err);
      CHECK(err == ECONNRESET);
      CHECK(got.size() < data.size());
      CHECK(std::equal(got.begin(), got.end(), data.begin()));  // a prefix of the truth
    };
    // The first frame without its new-stream flag: no history to continue.
    auto bad = wire;
    bad[at[0] + 1] = 0;
    check_bad(bad);
    // A raw length that does not match what the payload decodes to (either way).
    for (int d : {-1, +1, -500}) {
      bad = wire;
      put_le32(&bad[at[5] + 4], get_le32(&bad[at[5] + 4]) + static_cast<uint32_t>(d));
      check_bad(bad);
    }
    // Truncated anywhere.
    for (size_t cut : {at[3] + 5, at[4] + kFrameHeaderSize + 3, wire.size() - 1}) {
      bad.assign(wire.begin(), wire.begin() + static_cast<long>(cut));
      check_bad(bad);
    }
    if (level == 3) {  // zstd: a continuation marked as a new frame has no frame magic
      bad = wire;
      bad[at[4] + 1] = kFlagNewStream;
      check_bad(bad);
    }
  }
}



namespace {
// Bytes drawn uniformly from 112 values: no repeats for lz4 to find (its sample
// does not shrink), but zstd's entropy coding saves ~15% (log2(112) = 6.8 bits).
std::vector<uint8_t> slightly_compressible(size_t n) {
  std::mt19937 rng(8);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() % 112);
  return v;
}
size_t slow_allow(void*, size_t want) {  // a byte cap that binds: every send waits
  usleep(500);
  return want;
}
}  // namespace

TEST_CASE("at a binding cap, data zstd shrinks by ~15% is compressed; unbound it is not tried", "[compress]") {
  auto data = slightly_compressible(4 << 20);
  for (bool bound : {false, true}) {
    Tx t("fixed:zstd:3");
    const WireMeter meter{slow_allow, nullptr, nullptr};
    auto wire = encode(t, data, [](unsigned) { return kMaxFrameRaw; }, fixed(t.tx.policy.level), bound ? meter : kNoMeter);
    double ratio = static_cast<double>(data.size()) / static_cast<double>(wire.size());
    INFO((bound ? "bound" : "unbound") << ": ratio " << ratio);
    if (bound) CHECK(ratio > 1.1);
    else CHECK(ratio < 1.01);
    int err;
    CHECK((decode(wire, &err) == data));
    CHECK(err == 0);
  }
}

TEST_CASE("under a cap of known rate the first chunk goes at the level the first round picks", "[compress]") {
  std::mt19937 rng(11);
  std::vector<uint8_t> text(kMaxFrameRaw);
  fill_text(rng, text.data(), text.size());
  for (double rate : {0.0, 1e6}) {
    Tx t("datarate");
    Drain out;
    // A capped meter that never waits: only its rate matters here.
    const WireMeter meter{[](void*, size_t want) { return want; }, nullptr, nullptr, true, rate};
    put(t, out.fd(), text.data(), text.size(), meter);
    out.finish();
    INFO("rate " << rate);
    // Unknown rate: the middle of the ladder (zstd:3) until the first period ends. At
    // 1 MB/s every level is link-bound: a dearer one with more ratio, at once.
    CHECK(t.tx.level_chunks[3] == (rate > 0 ? 0u : 1u));
    uint64_t dearer = t.tx.level_chunks[4] + t.tx.level_chunks[5] + t.tx.level_chunks[6];
    CHECK(dearer == (rate > 0 ? 1u : 0u));
  }
}

namespace {
// Barely compressible data with far repeats, like a stream of .gz files: random 4 KiB
// blocks, every fourth a copy of the block 1.5 MiB back (within zstd's 2 MiB window,
// beyond what the capped tables of zstd:5-9 keep).
std::vector<uint8_t> far_repeats(size_t n) {
  constexpr size_t kBlock = 4096, kBack = 1536 * 1024;
  std::mt19937 rng(21);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i + kBlock <= n; i += kBlock) {
    if (i >= kBack && (i / kBlock) % 4 == 0) std::memcpy(&v[i], &v[i - kBack], kBlock);
    else
      for (size_t j = 0; j < kBlock; ++j) v[i + j] = static_cast<uint8_t>(rng());
  }
  return v;
}
}  // namespace

TEST_CASE("long-distance matching finds far repeats in barely compressible data, byte-exact", "[compress]") {
  auto data = far_repeats(4 << 20);
  LevelList l = levels_default();
  std::vector<uint8_t> out(kMaxFrameWire), back(kMaxFrameRaw);
  // Every zstd level of the list on its fixed workspace, with and without LDM.
  for (uint8_t level = 2; level < l.count; ++level) {
    double ratio[2] = {0, 0};
    for (bool ldm : {false, true}) {
      Workspace tws(tx_stream_codec_size(l)), rws(rx_codec_size()), wide(rx_codec_wide_size());
      TxStreamCodec tx{};
      RxCodec rx{};
      REQUIRE(tx_stream_codec_init(tx, tws.mem, tws.size, l));
      REQUIRE(rx_codec_init(rx, rws.mem, rws.size));
      REQUIRE(rx_codec_widen(rx, 0, wide.mem, wide.size));
      tx.zstd_bytes = kZstdWidenAfter;  // one frame, 8 MiB wide from the start: no restart at 2 MiB
      stream_long_matches(tx, ldm);
      size_t wire = 0;
      bool exact = true;
      for (size_t pos = 0; pos < data.size(); pos += kMaxFrameRaw) {
        size_t n = std::min(kMaxFrameRaw, data.size() - pos);
        uint8_t flags = 0;
        size_t c = stream_compress(tx, l.levels[level], &data[pos], n, out.data(), out.size(), &flags);
        REQUIRE(c > 0);
        const uint8_t* got = codec_decompress_stream(rx, Method::Zstd, flags, out.data(), c, back.data(), n);
        REQUIRE(got != nullptr);
        exact = exact && std::memcmp(got, &data[pos], n) == 0;
        wire += c;
      }
      CHECK(exact);
      CHECK_FALSE(tx.ldm_failed);  // the workspace holds LDM's tables at every level
      CHECK(tx.zs[0].ldm == ldm);
      ratio[ldm] = static_cast<double>(data.size()) / static_cast<double>(wire);
    }
    INFO("level zstd:" << int(l.levels[level].param) << ": ratio " << ratio[0] << " without LDM, " << ratio[1]
                       << " with");
    CHECK(ratio[1] > 1.15);  // a quarter of the blocks repeat: at most 1.33
    CHECK(ratio[1] >= ratio[0] * 0.995);
    if (l.levels[level].param >= 5) CHECK(ratio[0] < 1.05);  // the capped row tables lose them
  }
}

TEST_CASE("a libzstd that cannot fit long-distance matching: one chunk raw, then zstd without it", "[compress]") {
  // The workspace zstd_ldm_space() sizes, short of LDM's tables: a zstd whose matcher needs
  // more than we reserve. The sender's own static context, swapped for one sized
  // without LDM (zstd:3's stream parameters, as codec_params.cc's stream_cparams).
  LevelList l = levels_default();
  Workspace tws(tx_stream_codec_size(l)), rws(rx_codec_size());
  TxStreamCodec tx{};
  RxCodec rx{};
  REQUIRE(tx_stream_codec_init(tx, tws.mem, tws.size, l));
  REQUIRE(rx_codec_init(rx, rws.mem, rws.size));
  ZSTD_compressionParameters cp = ZSTD_getCParams(3, size_t{1} << kZstdWindowLog, 0);
  cp.windowLog = kZstdWindowLogNarrow;  // a connection's first frames (kZstdWidenAfter)
  if (cp.hashLog > kZstdHashLog) cp.hashLog = kZstdHashLog;
  if (cp.chainLog > kZstdChainLog) cp.chainLog = kZstdChainLog;
  cp = ZSTD_adjustCParams(cp, 0, 0);
  Workspace small(ZSTD_estimateCStreamSize_usingCParams(cp));
  tx.zs[0].zcs = ZSTD_initStaticCCtx(small.mem, small.size);
  REQUIRE(tx.zs[0].zcs);
  uint8_t zstd3 = 0;
  for (uint8_t i = 0; i < l.count; ++i)
    if (l.levels[i].method == Method::Zstd && l.levels[i].param == 3) zstd3 = i;
  REQUIRE(zstd3 > 0);

  auto data = far_repeats(1 << 20);
  std::vector<uint8_t> out(kMaxFrameWire), back(kMaxFrameRaw);
  stream_long_matches(tx, true);
  uint8_t flags = 0;
  CHECK(stream_compress(tx, l.levels[zstd3], data.data(), kMaxFrameRaw, out.data(), out.size(), &flags) == 0);
  CHECK(tx.ldm_failed);  // the chunk goes raw; LDM is off for good on this stream
  stream_long_matches(tx, true);
  CHECK_FALSE(tx.want_ldm);
  for (size_t pos = kMaxFrameRaw; pos < data.size(); pos += kMaxFrameRaw) {
    size_t n = std::min(kMaxFrameRaw, data.size() - pos);
    size_t c = stream_compress(tx, l.levels[zstd3], &data[pos], n, out.data(), out.size(), &flags);
    REQUIRE(c > 0);
    if (pos == kMaxFrameRaw) CHECK((flags & kFlagNewStream));  // a new frame, which the receiver starts afresh
    const uint8_t* got = codec_decompress_stream(rx, Method::Zstd, flags, out.data(), c, back.data(), n);
    REQUIRE(got != nullptr);
    CHECK(std::memcmp(got, &data[pos], n) == 0);
  }
  CHECK_FALSE(tx.zs[0].ldm);
}

TEST_CASE("a sender turns long-distance matching on for barely compressible data only", "[compress]") {
  std::mt19937 rng(5);
  std::vector<uint8_t> words(2 << 20);
  fill_text(rng, words.data(), words.size());
  for (bool poor : {true, false}) {
    Tx t("datarate");
    auto wire = encode(t, poor ? far_repeats(2 << 20) : words, [](unsigned) { return kMaxFrameRaw; },
                       [&](unsigned) { return t.tx.policy.level; });
    int err;
    auto got = decode(wire, &err);
    CHECK(err == 0);
    CHECK(got.size() == (2u << 20));
    INFO((poor ? "far repeats" : "text"));
    CHECK(t.tx.codec.want_ldm == poor);
  }
}

namespace {
// A clock that moves `g_clock_step` ns at every read: each calibration run "takes" it.
std::atomic<uint64_t> g_clock{1'000'000'000}, g_clock_step{1000};
uint64_t stepping_clock() { return g_clock.fetch_add(g_clock_step.load()) + g_clock_step.load(); }

// Senders whose 128 KiB writes of text go to a socket drained by a thread, on the
// stepping clock (every run "takes" `step` ns: with 1 us each level runs twice,
// kOneRunNs, however slow the host).
struct CalibrationRig {
  std::vector<uint8_t> text = std::vector<uint8_t>(kMaxFrameRaw);
  int sv[2]{-1, -1};
  std::thread drain;
  const IoOps io{kLibcIo.sendmsg, kLibcIo.recv, kLibcIo.poll, stepping_clock};
  explicit CalibrationRig(unsigned seed) {
    std::mt19937 rng(seed);
    fill_text(rng, text.data(), text.size());
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    free_the_copy();
    drain = std::thread([this] {
      uint8_t buf[1 << 16];
      while (::read(sv[1], buf, sizeof buf) > 0) {
      }
    });
    g_clock_step = 1000;
  }
  ~CalibrationRig() {
    free_the_copy();
    g_clock_step = 1000;
    close(sv[0]);
    drain.join();
    close(sv[1]);
  }
  void write(Tx& t) {
    iovec v{text.data(), text.size()};
    REQUIRE(tx_write(t.tx, io, kNoMeter, sv[0], &v, 1, 0) == static_cast<ssize_t>(text.size()));
  }
  // An earlier test's sender may have left its claim on the calibrator's copy of a chunk.
  // It lapses 200 ms after its last use by the claimant's clock, which is not the
  // stepping one: without this the rounds here fell back to one level per chunk.
  static void free_the_copy() {
    LevelList levels = levels_default();
    if (Calibrator* c = calibrator_try_acquire(levels)) {
      c->owner = nullptr;
      calibrator_release();
    }
  }
};
}  // namespace

TEST_CASE("after datarate's first pick, calibration rounds run its level and the two beside it", "[compress]") {
  CalibrationRig rig(11);  // each level runs twice, one run per chunk: cal_next shows each
  Tx a("datarate");
  rig.write(a);  // the first round: every level at once
  REQUIRE(a.tx.cal_paired);
  for (uint8_t at : {uint8_t{4}, uint8_t{6}, uint8_t{1}}) {
    INFO("policy level " << int(at));
    a.tx.policy.dr.warm = true;  // past the first pick
    a.tx.policy.dr.ccl = at;
    a.tx.policy.level = at;
    a.tx.policy.model.level[at].known = true;
    a.tx.policy.sampled = false;  // a round is due
    a.tx.cal_next = 0;
    std::vector<unsigned> ran;
    unsigned chunks = 0;
    rig.write(a);
    while (chunks < 64) {
      if (ran.empty() || ran.back() != a.tx.cal_next) ran.push_back(a.tx.cal_next);
      if (!a.tx.cal_next) break;
      a.tx.policy.level = at;  // the policy may move: keep the round's subject fixed
      rig.write(a), ++chunks;
    }
    std::vector<unsigned> want;
    for (unsigned l = at > 1 ? at - 1u : 1u; l <= at + 1u && l < a.levels.count; ++l) want.push_back(l);
    want.push_back(0);
    CHECK(ran == want);
  }
}

TEST_CASE("calibration rounds after the first spread over chunks on a shared copy, or fall back", "[compress]") {
  CalibrationRig rig(9);
  Tx a("datarate"), b("datarate");
  rig.write(a);  // the first round: every level at once
  rig.write(b);
  CHECK(a.tx.cal_paired);
  CHECK(a.tx.cal_next == 0);
  a.tx.policy.sampled = false;  // as when the policy sees the data change
  b.tx.policy.sampled = false;
  rig.write(a);  // a's round takes the copy: level 1's first run
  CHECK(a.tx.cal_pair);
  CHECK(a.tx.cal_next == 1);
  CHECK(a.tx.cal_pass == 1);
  rig.write(b);  // the copy is a's: b runs level 1 twice on its own chunk
  CHECK_FALSE(b.tx.cal_pair);
  CHECK(b.tx.cal_next == 2);
  unsigned chunks = 1;
  while (a.tx.cal_next && chunks < 64) rig.write(a), ++chunks;
  CHECK(a.tx.cal_next == 0);
  CHECK(chunks == 2u * (a.levels.count - 1));  // one run per chunk, two per level
  CHECK(a.tx.policy.sampled);
  b.tx.cal_next = 0;
  b.tx.policy.sampled = false;
  rig.write(b);  // the copy is free again
  CHECK(b.tx.cal_pair);
}

TEST_CASE("a spread round runs a level once when its first run took a millisecond or more", "[compress]") {
  CalibrationRig rig(13);
  for (uint64_t step : {uint64_t{1000}, uint64_t{2'000'000}}) {
    INFO("every clock read " << step << " ns later");
    g_clock_step = step;
    Tx a("datarate");
    rig.write(a);  // the first round: every level at once
    REQUIRE(a.tx.cal_paired);
    a.tx.policy.sampled = false;  // a round is due (the policy not warm: every level)
    unsigned chunks = 0;
    do rig.write(a), ++chunks;
    while (a.tx.cal_next && chunks < 64);
    CHECK(a.tx.cal_next == 0);
    CHECK(chunks == (step >= 1'000'000 ? 1u : 2u) * (a.levels.count - 1));
  }
}

TEST_CASE("the first round runs a level once when its first run took a millisecond or more", "[compress]") {
  CalibrationRig rig(17);
  uint64_t reads[2] = {0, 0};
  int k = 0;
  for (uint64_t step : {uint64_t{1000}, uint64_t{2'000'000}}) {
    INFO("every clock read " << step << " ns later");
    g_clock_step = step;
    Tx a("datarate");
    uint64_t before = g_clock.load();
    rig.write(a);  // the first round: every level at once
    REQUIRE(a.tx.cal_paired);
    reads[k++] = (g_clock.load() - before) / step;
  }
  // A run reads the clock twice (its start and end): the slow clock saves the second
  // run of every level.
  CHECK(reads[0] - reads[1] == 2u * (Tx("datarate").levels.count - 1));
}
