// SPDX-License-Identifier: MIT
// The mix (tx_mix.cc, tx_promote_chunk): at a binding cap, a datarate sender ahead of
// the link by more than half the bucket's depth compresses the chunk one level up
// where that starts no new codec frame (lz4 -> zstd:1, or two zstd levels on the
// sender's two zstd streams), so the two levels share the link chunk by chunk. Frames
// alternate between the codecs (streams) and decode byte-exact; without a second zstd
// stream two zstd levels, and a fixed level and an unknown bucket never mix; and a
// probe from or to a mixed period is judged on the rates, not on one level's model.
#include <catch2/catch.hpp>
#include <ctime>
#include <unistd.h>

#include "compress_policy_util.h"
#include "compress_stream_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {

// A capped meter that never waits; `ahead` reads the next of a pattern of leads.
struct Leads {
  std::vector<double> seq;
  size_t at = 0;
};
double next_lead(void* ctx) {
  auto* l = static_cast<Leads*>(ctx);
  double a = l->seq[l->at % l->seq.size()];
  ++l->at;
  return a;
}
WireMeter meter_with(Leads& leads) {
  return WireMeter{[](void*, size_t want) { return want; }, nullptr, &leads, true, 0, next_lead};
}

// Makes zstd:5 (level 4) CPU-bound for the mix across zstd streams: promoted chunks at
// it measured (within the last second) slower than a link of `rate` B/s takes their
// wire bytes (1e12: any real compression is slower). The measurement goes on with the
// real chunks' times.
void up_level_measured(Tx& t, WireMeter& m, double rate) {
  m.rate_bps = rate;
  t.tx.promo_level = 4;
  t.tx.promo_ns_byte = 1;
  t.tx.promo_wire_byte = 0.2;
  t.tx.promo_at_ns = now_ns();
}

std::vector<Method> methods_of(const std::vector<uint8_t>& wire) {
  std::vector<Method> m;
  for (size_t at : frames_of(wire)) {
    FrameHeader h{};
    REQUIRE(frame_header_parse(&wire[at], h));
    m.push_back(h.method);
  }
  return m;
}

auto one_chunk = [](unsigned) { return kMaxFrameRaw; };
// Holds the policy at level `l` (the first calibration round would otherwise move it
// to datarate's own level).
auto at_level(Tx& t, uint8_t l) {
  t.tx.policy.dr.ccl = l;
  return [l](unsigned) { return l; };
}

}  // namespace

TEST_CASE("mix: chunks ahead of the link go one level up where no new frame starts, byte-exact", "[compress]") {
  auto data = text(31, 24 * kMaxFrameRaw);
  Leads leads{{0.9, 0.1, 0.1, 0.7}};  // ahead, behind, behind, ahead, ...
  Tx t("datarate");
  auto wire = encode(t, data, one_chunk, at_level(t, 1), meter_with(leads));  // the policy at lz4
  auto methods = methods_of(wire);
  REQUIRE(methods.size() == 24);
  for (size_t i = 0; i < methods.size(); ++i) {
    INFO("chunk " << i);
    CHECK(methods[i] == (i % 4 == 0 || i % 4 == 3 ? Method::Zstd : Method::Lz4));
  }
  CHECK(t.tx.level_chunks[1] == 12);  // lz4
  CHECK(t.tx.level_chunks[2] == 12);  // zstd:1, promoted
  int err;
  CHECK((decode(wire, &err) == data));
  CHECK(err == 0);
  // Small writes that are not compressed (below kSmallWrite) are not promoted either,
  // and a stream of tiny writes between the chunks still decodes.
  Tx small("datarate");
  Leads always{{0.9}};
  auto mixed_sizes = [](unsigned call) { return call % 2 ? size_t{100} : kMaxFrameRaw; };
  auto w2 = encode(small, data, mixed_sizes, at_level(small, 1), meter_with(always));
  CHECK((decode(w2, &err) == data));
  CHECK(err == 0);
}

namespace {
struct FrameInfo {
  Method method;
  uint8_t flags;
};
std::vector<FrameInfo> frame_infos(const std::vector<uint8_t>& wire) {
  std::vector<FrameInfo> f;
  for (size_t at : frames_of(wire)) {
    FrameHeader h{};
    REQUIRE(frame_header_parse(&wire[at], h));
    f.push_back({h.method, h.flags});
  }
  return f;
}
}  // namespace

TEST_CASE("mix: two zstd levels on the two zstd streams, each keeping its history, byte-exact", "[compress]") {
  auto data = text(33, 24 * kMaxFrameRaw);
  Leads leads{{0.9, 0, 0, 0.7}};  // a run up ends where the lead is spent
  Tx t("datarate");
  WireMeter m = meter_with(leads);
  up_level_measured(t, m, 1e12);
  auto wire = encode(t, data, one_chunk, at_level(t, 3), m);  // the policy at zstd:3
  auto f = frame_infos(wire);
  REQUIRE(f.size() == 24);
  bool up_second = (f[0].flags & kFlagZstd2) != 0;  // chunk 0 (zstd:5) took one stream, chunk 1 the other
  for (size_t i = 0; i < f.size(); ++i) {
    INFO("chunk " << i);
    bool up = i % 4 == 0 || i % 4 == 3;
    CHECK(f[i].method == Method::Zstd);
    CHECK(((f[i].flags & kFlagZstd2) != 0) == (up == up_second));  // each level on its own stream
    // Each stream starts once, then continues; past 2 MiB (chunk 16) each restarts
    // once with the 8 MiB window (codec.h, kZstdWidenAfter).
    CHECK(((f[i].flags & kFlagNewStream) != 0) == (i <= 1 || i == 16 || i == 17));
  }
  CHECK(t.tx.level_chunks[3] == 12);
  CHECK(t.tx.level_chunks[4] == 12);
  CHECK(t.extra.gets == 1);  // mapped once
  int err;
  CHECK((decode(wire, &err) == data));
  CHECK(err == 0);
  // A receiver that gets no memory for the second stream refuses it: a reset, never
  // a wrong byte.
  auto got = decode(wire, &err, 70000, false);
  CHECK(err == ECONNRESET);
  CHECK(got.size() < data.size());
  CHECK(std::equal(got.begin(), got.end(), data.begin()));
}

TEST_CASE("mix: a chunk is promoted only if its compression fits in the lead", "[compress]") {
  auto data = text(35, 8 * kMaxFrameRaw);
  Leads ahead{{0.9}};  // 0.4 of a 10 ms bucket beyond the half kept: 4 ms
  for (double ms_per_chunk : {40.0, 0.1}) {
    INFO(ms_per_chunk << " ms a chunk at zstd:5");
    Tx t("datarate");
    WireMeter m = meter_with(ahead);
    m.depth_ns = 10e6;
    up_level_measured(t, m, 1e12);
    t.tx.promo_ns_byte = ms_per_chunk * 1e6 / kMaxFrameRaw;  // (zstd:19 on text: ~30 ms a chunk)
    auto wire = encode(t, data, one_chunk, at_level(t, 3), m);
    if (ms_per_chunk > 4) CHECK(t.tx.level_chunks[4] == 0);  // the link would idle while it compresses
    else CHECK(t.tx.level_chunks[4] > 0);
    int err;
    CHECK((decode(wire, &err) == data));
  }
}

TEST_CASE("mix: across the zstd streams chunks go up in runs, while the lead lasts", "[compress]") {
  auto data = text(37, 40 * kMaxFrameRaw);
  Leads leads{{0.9, 0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0}};
  Tx t("datarate");
  WireMeter m = meter_with(leads);
  up_level_measured(t, m, 1e12);
  auto wire = encode(t, data, one_chunk, at_level(t, 3), m);
  auto f = frame_infos(wire);
  REQUIRE(f.size() == 40);
  // Chunk 0 starts a run (ahead by more than half the depth); it goes on below that
  // lead for 16 chunks; then 0.1 starts none, and 0 ends none. Twice.
  for (size_t i = 0; i < f.size(); ++i) {
    INFO("chunk " << i);
    bool up = i % 20 < 16;
    CHECK(((f[i].flags & kFlagZstd2) != 0) == (up == ((f[0].flags & kFlagZstd2) != 0)));
  }
  CHECK(t.tx.level_chunks[4] == 32);
  CHECK(t.tx.level_chunks[3] == 8);
  int err;
  CHECK((decode(wire, &err) == data));
  // A lead spent within the run ends it at once.
  Leads short_lead{{0.9, 0.3, 0, 0.2, 0.2}};
  Tx u("datarate");
  WireMeter n = meter_with(short_lead);
  up_level_measured(u, n, 1e12);
  encode(u, text(38, 5 * kMaxFrameRaw), one_chunk, at_level(u, 3), n);
  CHECK(u.tx.level_chunks[4] == 2);
}

TEST_CASE("mix: two zstd levels only where the level above is CPU-bound", "[compress]") {
  // Each stream's history holds only its own chunks: where zstd:5 alone would keep the
  // link busy (a slow link: 1 MB/s), mixing costs ratio for nothing; the policy moves.
  auto data = text(36, 8 * kMaxFrameRaw);
  Leads ahead{{0.9}};
  Tx t("datarate");
  WireMeter m = meter_with(ahead);
  up_level_measured(t, m, 1e6);
  encode(t, data, one_chunk, at_level(t, 3), m);
  CHECK(t.tx.level_chunks[3] == 8);
  CHECK(t.tx.level_chunks[4] == 0);
  // Not measured: the model decides; it has never seen the link bind (no link rate),
  // so it calls no level CPU-bound.
  Tx u("datarate");
  m.rate_bps = 1e12;
  encode(u, data, one_chunk, at_level(u, 3), m);
  CHECK(u.tx.level_chunks[4] == 0);
  // lz4 -> zstd:1 (two codecs: no history is split that was not split before) mixes
  // regardless.
  Tx v("datarate");
  encode(v, data, one_chunk, at_level(v, 1), m);
  CHECK(v.tx.level_chunks[2] > 0);
}

TEST_CASE("a probe of another zstd level and back keeps the first level's history", "[compress]") {
  auto data = text(34, 10 * kMaxFrameRaw);
  auto probe = [](unsigned call) -> uint8_t { return call == 4 || call == 5 ? 4 : 3; };  // zstd:3, 5, 3
  for (bool second : {true, false}) {
    INFO((second ? "two zstd streams" : "one zstd stream"));
    Tx t("datarate", second);
    auto wire = encode(t, data, one_chunk, probe);
    auto f = frame_infos(wire);
    REQUIRE(f.size() == 10);
    CHECK(f[4].flags == (second ? kFlagNewStream | kFlagZstd2 : kFlagNewStream));
    CHECK(f[5].flags == (second ? kFlagZstd2 : 0));
    CHECK(f[6].flags == (second ? 0 : kFlagNewStream));  // back at zstd:3: its stream goes on, or restarts
    int err;
    CHECK((decode(wire, &err) == data));
    CHECK(err == 0);
  }
  // A fixed level never needs a second stream (nor asks for its memory).
  Tx fixed("fixed:zstd:3");
  encode(fixed, data, one_chunk, [](unsigned) -> uint8_t { return 3; });
  CHECK(fixed.extra.gets == 0);
}

TEST_CASE("mix: never across a zstd level change, for a fixed level, or without a bucket's lead", "[compress]") {
  auto data = text(32, 8 * kMaxFrameRaw);
  Leads ahead{{0.9}};
  int err;
  SECTION("datarate at zstd:3 without memory for a second zstd stream: zstd:5 would start a new frame") {
    Tx t("datarate", false);
    auto wire = encode(t, data, one_chunk, at_level(t, 3), meter_with(ahead));
    CHECK(t.tx.level_chunks[3] == 8);
    CHECK(t.tx.level_chunks[4] == 0);
    CHECK((decode(wire, &err) == data));
  }
  SECTION("fixed:lz4") {
    Tx t("fixed:lz4");
    auto wire = encode(t, data, one_chunk, at_level(t, 1), meter_with(ahead));
    CHECK(t.tx.level_chunks[1] == 8);
    CHECK(t.tx.level_chunks[2] == 0);
    for (Method m : methods_of(wire)) CHECK(m == Method::Lz4);
  }
  SECTION("datarate at none: the policy judged compression not worth it") {
    Tx t("datarate");
    encode(t, data, one_chunk, at_level(t, 0), meter_with(ahead));
    // A capped start's first chunk: zstd:3 (promoted to zstd:5 ahead of the link).
    CHECK(t.tx.level_chunks[0] + t.tx.level_chunks[3] + t.tx.level_chunks[4] == 8);
    CHECK(t.tx.level_chunks[3] + t.tx.level_chunks[4] <= 1);
    CHECK(t.tx.level_chunks[1] == 0);
  }
  SECTION("a meter without a lead (no byte bucket)") {
    Tx t("datarate");
    WireMeter m = meter_with(ahead);
    m.ahead = nullptr;
    encode(t, data, one_chunk, at_level(t, 1), m);
    CHECK(t.tx.level_chunks[1] == 8);
    CHECK(t.tx.level_chunks[2] == 0);
  }
}

TEST_CASE("mix: a probe from or to a mixed period is judged on the rates", "[compress]") {
  using namespace policy_test;
  // As in "a probe is judged on the same data": level 3 compresses 5% more than level
  // 2 on the round's chunk; the probe to 3 landed on data 16% less compressible and
  // reads 12% low. One level's model keeps it (same data); a period that mixed two
  // levels is not one level's, so its rate decides: reverted.
  CostModel m = round_model({40000, 25000, 23800}, {10000, 20000, 60000});
  PeriodMeasure at2 = measured(4.0e6, 4.0, 0.2, 1e7), at3 = measured(3.52e6, 3.52, 0.6, 1e7);
  auto judged = [&](const PeriodMeasure& before, const PeriodMeasure& after) {
    DatarateState s = steady_at(2, rate_of(before), true, true);
    s.period = before;
    REQUIRE(datarate_next(s, rate_of(before), 0.2, m) == 3);
    s.period = after;
    return datarate_next(s, rate_of(after), 0.2, m);
  };
  CHECK(judged(at2, at3) == 3);
  PeriodMeasure at2_mixed = at2;
  at2_mixed.promoted = 5;
  CHECK(judged(at2_mixed, at3) == 2);
  PeriodMeasure at3_mixed = at3;
  at3_mixed.promoted = 1;
  CHECK(judged(at2, at3_mixed) == 2);
  // The model's corrections (hist_gain, cpu_gain) learn nothing from a mixed period.
  CostModel c = m;
  model_observe(c, 2, 4'000'000, 500'000, 400'000'000, 0, 400'000'000, true);
  CHECK(c.hist_gain == 1.0);
  CHECK(c.cpu_gain == 1.0);
  model_observe(c, 2, 4'000'000, 500'000, 400'000'000, 0, 400'000'000, false);
  CHECK(c.hist_gain > 1.0);
}

namespace {
// A cap that binds: every send waits as long as the sender took since its last send
// (at most 0.2 s), so the waits are half of its time however slow the build runs (a
// fixed 0.3 ms was under the 5% that binds when TSan made each chunk's zstd take 10 ms
// and more: the round started though the sender was behind).
size_t waiting_allow(void*, size_t want) {
  static thread_local timespec last{};
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (last.tv_sec != 0) {
    long long ns = (now.tv_sec - last.tv_sec) * 1'000'000'000LL + (now.tv_nsec - last.tv_nsec);
    if (ns > 200'000'000) ns = 200'000'000;
    if (ns < 300'000) ns = 300'000;
    usleep(static_cast<useconds_t>(ns / 1000));
  }
  clock_gettime(CLOCK_MONOTONIC, &last);
  return want;
}
}  // namespace

TEST_CASE("a spread calibration round starts at a binding cap only while the sender is ahead", "[compress]") {
  // Every chunk waits in the meter, so "the last chunk waited" says nothing; the lead
  // does. Behind the link (0.1 of the depth) a due round waits; ahead (0.9) it starts.
  auto data = text(33, 12 * kMaxFrameRaw);
  Leads leads{{0.1}};
  WireMeter m = meter_with(leads);
  m.allow = waiting_allow;
  Tx t("datarate");
  Drain out;
  size_t pos = 0;
  auto chunk = [&] { put(t, out.fd(), &data[pos], kMaxFrameRaw, m), pos += kMaxFrameRaw; };
  for (int i = 0; i < 4; ++i) chunk();  // the first round, then the cap binds
  REQUIRE(t.tx.cal_paired);
  t.tx.policy.sampled = false;  // a round is due
  for (int i = 0; i < 3; ++i) chunk();
  CHECK(t.tx.cal_next == 0);  // behind: not started
  leads.seq = {0.9};
  chunk();
  CHECK(t.tx.cal_next != 0);  // ahead: started
}

TEST_CASE("mix: a probe down from a level sends no chunk back up to it", "[compress]") {
  // The period after a change judges the level probed: a probe down from zstd:5 to
  // zstd:3 must not be a mix with zstd:5 (its verdict would be about zstd:5). A probe up
  // from zstd:1 to zstd:3 mixes as usual.
  auto data = text(41, 6 * kMaxFrameRaw);
  Leads ahead{{0.9}};
  for (int from : {4, 2}) {
    INFO("probe from level " << from);
    Tx t("datarate");
    t.tx.policy.cfg.period_ns = 60'000'000'000;  // the probe's period does not end here
    WireMeter m = meter_with(ahead);
    up_level_measured(t, m, 1e12);
    t.tx.policy.dr.warm = true;
    t.tx.policy.dr.probe_from = static_cast<int8_t>(from);
    auto wire = encode(t, data, one_chunk, at_level(t, 3), m);
    CHECK(t.tx.policy.dr.probe_from == from);
    if (from == 4) CHECK(t.tx.level_chunks[4] == 0);
    else CHECK(t.tx.level_chunks[4] > 0);
    int err;
    CHECK((decode(wire, &err) == data));
    CHECK(err == 0);
  }
}

TEST_CASE("a datarate sender that widens its window at one level maps no second zstd stream", "[compress]") {
  auto data = text(43, 4 << 20);
  Tx t("datarate");
  auto wire = encode(t, data, one_chunk, at_level(t, 3));  // no bucket: no mix, one level
  CHECK(zstd_windows(wire) == (std::vector<uint64_t>{2u << 20, 8u << 20}));
  CHECK(t.extra.gets == 0);  // the widening restarts the open stream in place
  int err;
  CHECK((decode(wire, &err) == data));
  CHECK(err == 0);
}
