// SPDX-License-Identifier: MIT
// zstd windows on the wire (compress/codec.h, kZstdWidenAfter): frames start with a
// 2 MiB window and widen to 8 MiB once, decoders refuse more than their version's
// bound, the sender's 8 MiB window finds far repeats, and the sender's context is
// mapped for 2 MiB and grown in place when it widens (ZstdRoomGrow), or stays 2 MiB.
#define ZSTD_STATIC_LINKING_ONLY
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <zstd.h>

#include "compress/rx_stream.h"
#include "compress/tx_stream.h"
#include "compress/wire_format.h"
#include "compress_stream_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {
// A stream of `version` whose zstd frames ask for a window of 2^window_log bytes, as a
// foreign or newer sender might write it: `data` in 128 KiB frames of one zstd stream.
std::vector<uint8_t> zstd_stream_with_window(const std::vector<uint8_t>& data, int window_log, uint8_t version) {
  ZSTD_CCtx* z = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(z, ZSTD_c_windowLog, window_log);
  ZSTD_CCtx_setParameter(z, ZSTD_c_enableLongDistanceMatching, 1);  // finds repeats anywhere in the window
  std::vector<uint8_t> wire(kStreamHeaderSize), out(kMaxFrameWire);
  stream_header_write(wire.data(), version);
  for (size_t pos = 0; pos < data.size(); pos += kMaxFrameRaw) {
    ZSTD_inBuffer in{&data[pos], kMaxFrameRaw, 0};
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    while (ZSTD_compressStream2(z, &o, &in, ZSTD_e_flush) != 0) {
    }
    FrameHeader h{Method::Zstd, static_cast<uint32_t>(kMaxFrameRaw), static_cast<uint32_t>(o.pos),
                  static_cast<uint8_t>(pos ? 0 : kFlagNewStream)};
    uint8_t hb[kFrameHeaderSize];
    frame_header_write(hb, h);
    wire.insert(wire.end(), hb, hb + sizeof hb);
    wire.insert(wire.end(), out.begin(), out.begin() + static_cast<long>(o.pos));
  }
  ZSTD_freeCCtx(z);
  return wire;
}

// 9 MiB of text whose last MiB repeats the one 6 MiB back (inside an 8 MiB window only;
// past the first 2 MiB, which go out before the sender's frames widen), or is fresh text.
std::vector<uint8_t> text_with_far_repeat(bool repeat) {
  auto v = text(61, 8 << 20);
  auto tail = repeat ? std::vector<uint8_t>(v.begin() + (2 << 20), v.begin() + (3 << 20)) : text(62, 1 << 20);
  v.insert(v.end(), tail.begin(), tail.end());
  return v;
}
}  // namespace

TEST_CASE("zstd windows: 8 MiB from wire v4, 2 MiB before; larger ones are refused", "[compress]") {
  auto data = text(4, 4 << 20);
  int err;
  // v4: up to 8 MiB.
  CHECK((decode(zstd_stream_with_window(data, 23, kWireVersion), &err) == data));
  CHECK(err == 0);
  auto got = decode(zstd_stream_with_window(data, 24, kWireVersion), &err);
  CHECK(err == ECONNRESET);
  CHECK(got.empty());
  // v3 and v2: up to 2 MiB.
  for (uint8_t v : {kWireVersionNarrow, kWireVersionOne}) {
    CHECK((decode(zstd_stream_with_window(data, 21, v), &err) == data));
    CHECK(err == 0);
    got = decode(zstd_stream_with_window(data, 22, v), &err);
    CHECK(err == ECONNRESET);
    CHECK(got.empty());
  }
}

TEST_CASE("the sender's zstd window holds 8 MiB: a repeat 6 MiB back is found, byte-exact", "[compress]") {
  double ratio[2];
  std::vector<uint8_t> far_wire, far_data;
  for (bool repeat : {false, true}) {
    auto data = text_with_far_repeat(repeat);
    Tx t("fixed:zstd:3");
    stream_long_matches(t.tx.codec, true);  // the capped match tables have lost it; LDM keeps the window's
    auto wire = encode(t, data, [](unsigned) { return kMaxFrameRaw; }, [](unsigned) { return uint8_t{3}; });
    int err;
    CHECK((decode(wire, &err) == data));
    CHECK(err == 0);
    ratio[repeat] = static_cast<double>(data.size()) / static_cast<double>(wire.size());
    if (repeat) far_wire = wire, far_data = data;
  }
  INFO("ratio " << ratio[1] << " with the repeat, " << ratio[0] << " with fresh text");
  CHECK(ratio[1] > ratio[0] * 1.07);  // the last ninth nearly free: ~1.12x
  // The same stream read as v3 (2 MiB windows): its first frame (2 MiB) decodes, the
  // frame asking for 8 MiB is refused, never misread.
  far_wire[7] = kWireVersionNarrow;
  int err;
  auto got = decode(far_wire, &err);
  CHECK(err == ECONNRESET);
  CHECK(got.size() >= kZstdWidenAfter);
  CHECK(got.size() < far_data.size());
  CHECK(std::equal(got.begin(), got.end(), far_data.begin()));
}

TEST_CASE("workspace sizes per connection (docs/reference/compression.md)", "[compress]") {
  LevelList l = levels_default();
  size_t tx = tx_stream_size(l), rx = rx_stream_size();
  size_t tx2 = tx_stream_codec_extra_size(l), rx2 = rx_codec_extra_size(), rxw = rx_codec_wide_size();
  WARN("sender workspace " << tx / 1024 << " KiB (levels up to zstd:9), receiver " << rx / 1024
                           << " KiB; a second zstd stream: " << tx2 / 1024 << " and " << rx2 / 1024
                           << " KiB more; an 8 MiB decoder " << rxw / 1024 << " KiB");
  CHECK(tx < 11 * 1024 * 1024);  // the sender's contexts hold an 8 MiB window (wire v4)
  CHECK(tx2 < 10752 * 1024);
  // As the pool maps them: for 2 MiB, grown in place when a connection widens.
  size_t tx_narrow = tx_stream_size(l, false), tx2_narrow = tx_stream_codec_extra_size(l, false);
  WARN("mapped for the 2 MiB window: sender " << tx_narrow / 1024 << " KiB, a second zstd stream "
                                              << tx2_narrow / 1024 << " KiB");
  CHECK(tx_narrow < 5 * 1024 * 1024);
  CHECK(tx2_narrow < 4608 * 1024);
  CHECK(tx - tx_narrow >= 6 * 1024 * 1024);  // the window's 6 MiB, at least
  CHECK(rx < 3584 * 1024);  // the receiver's, 2 MiB until its sender's frames ask more
  CHECK(rx2 < 2560 * 1024);
  CHECK(rxw < 8704 * 1024);
}

TEST_CASE("frames start with a 2 MiB window and widen to 8 MiB once 2 MiB went out", "[compress]") {
  for (size_t total : {size_t{1} << 20, size_t{5} << 20}) {
    auto data = text(71, total);
    Tx t("fixed:zstd:3");
    auto wire = encode(t, data, [](unsigned) { return size_t{100000}; }, [](unsigned) { return uint8_t{3}; });
    auto windows = zstd_windows(wire);
    INFO(total << " bytes: " << windows.size() << " new zstd frames");
    if (total < kZstdWidenAfter) {
      CHECK(windows == std::vector<uint64_t>{2u << 20});
    } else {
      CHECK(windows == (std::vector<uint64_t>{2u << 20, 8u << 20}));  // widened once, not again
    }
    // The receiver maps an 8 MiB decoder only for the stream that asked for it.
    Extra extra;
    int err;
    CHECK((decode(wire, &err, 70000, true, &extra) == data));
    CHECK(err == 0);
    CHECK(extra.wide_gets[0] == (total < kZstdWidenAfter ? 0 : 1));
    CHECK(extra.wide_gets[1] == 0);
    CHECK(extra.gets == 0);
    // Without memory for it, a receiver resets the connection: what it hands out is a
    // prefix of the data, never a misdecoded byte.
    if (total >= kZstdWidenAfter) {
      Extra none;
      none.wide_ok = false;
      auto got = decode(wire, &err, 70000, true, &none);
      CHECK(err == ECONNRESET);
      CHECK(got.size() < data.size());
      CHECK(std::equal(got.begin(), got.end(), data.begin()));
    }
  }
}

TEST_CASE("a sender's zstd context grows in place when its frames widen; refused, it keeps 2 MiB frames", "[compress]") {
  auto data = text(71, 5 << 20);
  for (bool grow_ok : {true, false}) {
    INFO((grow_ok ? "growth given" : "growth refused"));
    Tx t("fixed:zstd:3", true, true);  // the first zstd stream's room for 2 MiB, as the pool maps it
    t.grow_ok = grow_ok;
    const ZstdSlot& z = t.tx.codec.zs[0];
    void* base = z.base;
    REQUIRE(z.room < t.tx.codec.wide_room);
    auto wire = encode(t, data, [](unsigned) { return size_t{100000}; }, [](unsigned) { return uint8_t{3}; });
    CHECK(t.grows == 1);  // asked once, when the frames first wanted 8 MiB
    CHECK(z.base == base);  // in place: nothing else in the workspace moves
    if (grow_ok) {
      CHECK(z.room == t.tx.codec.wide_room);
      CHECK(zstd_windows(wire) == (std::vector<uint64_t>{2u << 20, 8u << 20}));
    } else {
      CHECK(z.narrow_only);
      CHECK(zstd_windows(wire) == std::vector<uint64_t>{2u << 20});  // one frame: no restart for nothing
    }
    int err;
    CHECK((decode(wire, &err) == data));
    CHECK(err == 0);
  }
}
