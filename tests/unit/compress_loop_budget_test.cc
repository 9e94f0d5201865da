// SPDX-License-Identifier: MIT
// The event loop's compression budget (compress/tx_loop_budget.h, issue 53): the
// thread's budget follows the share of its time spent compressing, a chunk's level is
// capped by what fits the budget, calibration keeps to its share; and through tx_write,
// a non-blocking adaptive sender on a busy thread stays on cheap levels (a fixed level
// is kept), its stream intact.
#include <catch2/catch.hpp>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "compress/tx_loop_budget.h"
#include "compress/tx_send_buffer.h"
#include "compress_stream_util.h"

using namespace bonsai::compress;
using namespace compress_test;

namespace {
constexpr uint64_t kMs = 1'000'000;

// A model whose level l (1..n-1) costs cost_ns[l] per 128 KiB chunk.
CostModel model_with(std::vector<double> cost_ns) {
  CostModel m;
  model_init(m, static_cast<uint8_t>(cost_ns.size()));
  for (size_t l = 1; l < cost_ns.size(); ++l)
    if (cost_ns[l] >= 0) {
      m.level[l].known = true;
      m.level[l].ratio = 2.0 + static_cast<double>(l);
      m.level[l].cpu_ns_byte = cost_ns[l] / 131072.0;
    }
  return m;
}
}  // namespace

TEST_CASE("loop budget: the thread's share of compressing sets the chunk budget", "[compress][loop]") {
  LoopBudget b{};
  CHECK(loop_budget_chunk_ns(b) == kLoopStartNs);
  uint64_t t = 1'000'000'000;
  CHECK_FALSE(loop_budget_note(b, t, 0, 0));  // starts the window
  // 90% of each window compressing: the budget shrinks (at most halving a window) to the floor.
  double last = loop_budget_chunk_ns(b);
  for (int w = 0; w < 20; ++w) {
    t += kLoopWindowNs;
    CHECK(loop_budget_note(b, t, kLoopWindowNs * 9 / 10, 0));
    double now = loop_budget_chunk_ns(b);
    CHECK(now <= last);
    CHECK(now >= last * 0.5 - 1);
    last = now;
  }
  CHECK(loop_budget_chunk_ns(b) == kLoopChunkMinNs);
  CHECK(b.share > kLoopShare);
  // An idle thread (long windows, nothing compressed): it grows by kLoopGrow at most, to the ceiling.
  for (int w = 0; w < 30; ++w) {
    t += kLoopWindowNs * 3;
    loop_budget_note(b, t, 0, 0);
    double now = loop_budget_chunk_ns(b);
    CHECK(now <= last * kLoopGrow + 1);
    last = now;
  }
  CHECK(loop_budget_chunk_ns(b) == kLoopChunkMaxNs);
  // Within the band (between kLoopGrowShare x kLoopShare and kLoopShare): held.
  LoopBudget h{};
  h.chunk_ns = 1.5e6;
  h.share = 0.25;
  h.win_start_ns = t;
  t += kLoopWindowNs;
  loop_budget_note(h, t, kLoopWindowNs / 4, 0);
  CHECK(h.chunk_ns == 1.5e6);
  // A window not over yet changes nothing.
  CHECK_FALSE(loop_budget_note(h, t + kLoopWindowNs / 2, kLoopWindowNs, 0));
  CHECK(h.chunk_ns == 1.5e6);
}

TEST_CASE("loop budget: calibration keeps to its share of the thread", "[compress][loop]") {
  LoopBudget b{};
  CHECK(loop_may_calibrate(b, 5));
  uint64_t t = 1'000'000'000;
  loop_budget_note(b, t, 0, 0);
  CHECK(loop_may_calibrate(b, t + 1));
  // Calibration worth kLoopCalShare of a window, in its first half: no more this window.
  loop_budget_note(b, t + kLoopWindowNs / 2, 0, static_cast<uint64_t>(kLoopCalShare * kLoopWindowNs) + 1);
  CHECK_FALSE(loop_may_calibrate(b, t + kLoopWindowNs / 2 + 1));
  // The window ends with 1/10 of it calibrating: the smoothed share stays above the limit a while.
  loop_budget_note(b, t + kLoopWindowNs, 0, kLoopWindowNs / 10);
  CHECK_FALSE(loop_may_calibrate(b, t + kLoopWindowNs + 1));
  uint64_t at = t + kLoopWindowNs;
  for (int w = 0; w < 6; ++w) loop_budget_note(b, at += kLoopWindowNs, 0, 0);
  CHECK(loop_may_calibrate(b, at + 1));
}

TEST_CASE("loop budget: a chunk's level is the highest that fits the budget", "[compress][loop]") {
  // none, lz4 0.2 ms, zstd:1 0.6, zstd:3 1.3, zstd:5 2.7, zstd:6 3.5, zstd:9 6 (a 128 KiB chunk)
  CostModel m = model_with({0, 0.2e6, 0.6e6, 1.3e6, 2.7e6, 3.5e6, 6e6});
  CHECK(loop_level_cap(m, 6, 131072, 4e6) == 5);
  CHECK(loop_level_cap(m, 6, 131072, 1.5e6) == 3);
  CHECK(loop_level_cap(m, 2, 131072, 1.5e6) == 2);      // never above the level wanted
  CHECK(loop_level_cap(m, 6, 131072, 0.1e6) == 1);      // the cheapest compressing level always
  CHECK(loop_level_cap(m, 0, 131072, 0.1e6) == 0);
  CHECK(loop_level_cap(m, 6, 32768, 1.4e6) == 5);       // a quarter chunk: a quarter of the time
  m.cpu_gain = 2.0;                                     // the stream costs twice the calibration
  CHECK(loop_level_cap(m, 6, 131072, 1.5e6) == 2);
  // An unknown level ends the climb (it may be far dearer); with none known, no cap.
  CostModel u = model_with({0, 0.2e6, 0.6e6, -1, 2.7e6, 3.5e6, -1});
  CHECK(loop_level_cap(u, 6, 131072, 10e6) == 2);
  CostModel none = model_with({0, -1, -1, -1, -1, -1, -1});
  CHECK(loop_level_cap(none, 6, 131072, 0.1e6) == 6);
  CHECK(loop_level_ns(u, 3, 131072) < 0);
  CHECK(loop_level_ns(u, 0, 131072) == 0);
}

namespace {
// Writes `data` non-blocking (MSG_DONTWAIT) through `t` with the thread budget `loop`
// (nullptr: none) in writes of 128 KiB, waiting for the socket when full, the policy's
// level set to `want` before each (as datarate at a binding cap: zstd:9); returns the wire.
std::vector<uint8_t> send_nonblocking(Tx& t, const std::vector<uint8_t>& data, LoopBudget* loop, uint8_t want) {
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  std::vector<uint8_t> wire;
  std::thread r([&] {
    uint8_t buf[1 << 16];
    for (ssize_t k; (k = ::read(sv[1], buf, sizeof buf)) > 0;) wire.insert(wire.end(), buf, buf + k);
  });
  WireMeter m{nullptr, nullptr, nullptr};
  m.loop = loop;
  size_t pos = 0;
  for (int calls = 0; pos < data.size() && calls < 100000; ++calls) {
    size_t n = data.size() - pos < 131072 ? data.size() - pos : 131072;
    iovec v{const_cast<uint8_t*>(data.data() + pos), n};
    t.tx.policy.level = want;
    ssize_t k = tx_write(t.tx, kLibcIo, m, sv[0], &v, 1, MSG_DONTWAIT);
    if (k < 0) {
      REQUIRE(errno == EAGAIN);
      pollfd p{sv[0], POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    pos += static_cast<size_t>(k);
  }
  REQUIRE(pos == data.size());
  for (int i = 0; i < 10000 && tx_pending(t.tx); ++i) {
    if (tx_flush(t.tx, kLibcIo, m, sv[0], MSG_DONTWAIT) != EAGAIN) break;
    pollfd p{sv[0], POLLOUT, 0};
    ::poll(&p, 1, 1000);
  }
  REQUIRE(tx_pending(t.tx) == 0);
  close(sv[0]);
  r.join();
  close(sv[1]);
  return wire;
}
}  // namespace

TEST_CASE("loop budget: a busy thread's non-blocking sender stays on cheap levels, stream intact",
          "[compress][loop]") {
  std::vector<uint8_t> data = text(7, 12u << 20);
  // The policy wants zstd:9 (as datarate at a binding cap) on a thread already busy
  // compressing (budget at the floor); it writes back to back, so its share stays high:
  // every chunk runs at a level the budget fits (by the sender's own model), never zstd:9.
  Tx t("datarate");
  LoopBudget loop{};
  loop.chunk_ns = kLoopChunkMinNs;
  loop.share = 0.9;
  std::vector<uint8_t> wire = send_nonblocking(t, data, &loop, 6);
  int err = 0;
  CHECK(decode(wire, &err) == data);
  CHECK(err == 0);
  uint64_t chunks = 0;
  for (unsigned l = 0; l < t.levels.count; ++l) chunks += t.tx.level_chunks[l];
  CHECK(chunks >= 90);
  double budget = loop_budget_chunk_ns(loop);
  INFO("budget " << budget << " ns, share " << loop.share);
  for (uint8_t l = 2; l < t.levels.count; ++l) {
    double ns = loop_level_ns(t.tx.policy.model, l, 131072);
    INFO("level " << int(l) << ": " << t.tx.level_chunks[l] << " chunks, " << ns << " ns a chunk");
    if (ns > 2 * budget || ns < 0) CHECK(t.tx.level_chunks[l] == 0);
  }
  CHECK(t.tx.level_chunks[6] == 0);
  // Without a thread budget (a blocking sender's case) the same sender runs zstd:9.
  Tx b("datarate");
  std::vector<uint8_t> small(data.begin(), data.begin() + (2u << 20));
  wire = send_nonblocking(b, small, nullptr, 6);
  CHECK(decode(wire, &err) == small);
  CHECK(b.tx.level_chunks[6] >= 15);  // the first chunk's at the first round's pick
  // A fixed level is the user's: kept whatever the thread's load.
  Tx f("fixed:zstd:9");
  LoopBudget busy{};
  busy.chunk_ns = kLoopChunkMinNs;
  wire = send_nonblocking(f, small, &busy, 6);
  CHECK(decode(wire, &err) == small);
  CHECK(f.tx.level_chunks[6] >= 15);
}
