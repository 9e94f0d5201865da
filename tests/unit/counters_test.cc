// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/counters_abi.h and sys/lane_add.h: per-thread counter lanes
// summed by counters_total (with the wire bytes of compressed sockets), zeroed by
// counters_reset, and the unlocked lane_add.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "abi/counters_abi.h"
#include "sys/lane_add.h"

using namespace bonsai;

namespace {

std::unique_ptr<ProcessCounters> fresh() { return std::make_unique<ProcessCounters>(); }  // zeroed

// Fills every lane and the slow-path counters with distinct values.
void fill(ProcessCounters& pc) {
  for (unsigned l = 0; l < kCounterLanes; ++l)
    for (size_t c = 0; c < kCallCount; ++c) {
      lane_add(pc.lanes[l].by_call[c].calls, (c + 1) * (l + 1));
      lane_add(pc.lanes[l].by_call[c].bytes, (c + 1) * (l + 1) * 1000);
    }
  for (size_t c = 0; c < kCallCount; ++c) {
    pc.throttled[c].store(c + 7);
    pc.wait_ns[c].store((c + 7) * 1'000'000);
    pc.wire_bytes[c].store((c + 1) * 300);
  }
}

}  // namespace

TEST_CASE("counters: a fresh block totals zero", "[counters]") {
  auto pc = fresh();
  for (size_t c = 0; c < kCallCount; ++c) {
    CallTotals t = counters_total(*pc, static_cast<CallId>(c));
    CHECK(t.calls == 0);
    CHECK(t.bytes == 0);
    CHECK(t.throttled == 0);
    CHECK(t.wait_ns == 0);
    CHECK(t.wire_bytes == 0);
  }
  CHECK(alignof(ProcessCounters) == 64);
}

TEST_CASE("counters: counters_total sums every lane of one call", "[counters]") {
  auto pc = fresh();
  fill(*pc);
  const uint64_t lane_sum = kCounterLanes * (kCounterLanes + 1) / 2;  // 1 + 2 + ... + 16
  for (size_t c = 0; c < kCallCount; ++c) {
    INFO("call " << call_name(static_cast<CallId>(c)));
    CallTotals t = counters_total(*pc, static_cast<CallId>(c));
    CHECK(t.calls == (c + 1) * lane_sum);
    CHECK(t.bytes == (c + 1) * lane_sum * 1000);
    CHECK(t.wire_bytes == (c + 1) * 300);
    CHECK(t.throttled == c + 7);
    CHECK(t.wait_ns == (c + 7) * 1'000'000);
  }
}

TEST_CASE("counters: each lane, including the shared last one, counts", "[counters]") {
  struct Row {
    unsigned lane;
    CallId call;
    uint64_t calls, bytes;
  };
  const Row rows[] = {{0, CallId::read, 1, 4096},
                      {1, CallId::write, 3, 1},
                      {7, CallId::sendfile, 2, uint64_t{1} << 40},
                      {kCounterLanes - 1, CallId::fwrite, 5, 12345},
                      {kCounterLanes - 1, CallId::openat, 9, 0}};
  for (const Row& r : rows) {
    INFO("lane " << r.lane << " call " << call_name(r.call));
    auto pc = fresh();
    auto c = static_cast<size_t>(r.call);
    for (uint64_t i = 0; i < r.calls; ++i) lane_add(pc->lanes[r.lane].by_call[c].calls, 1);
    lane_add(pc->lanes[r.lane].by_call[c].bytes, r.bytes);
    CallTotals t = counters_total(*pc, r.call);
    CHECK(t.calls == r.calls);
    CHECK(t.bytes == r.bytes);
    for (size_t other = 0; other < kCallCount; ++other)  // no other call moved
      if (other != c) CHECK(counters_total(*pc, static_cast<CallId>(other)).calls == 0);
  }
}

TEST_CASE("counters: counters_reset zeroes every counter", "[counters]") {
  auto pc = fresh();
  fill(*pc);
  counters_reset(*pc);
  for (size_t c = 0; c < kCallCount; ++c) {
    CallTotals t = counters_total(*pc, static_cast<CallId>(c));
    CHECK(t.calls == 0);
    CHECK(t.bytes == 0);
    CHECK(t.throttled == 0);
    CHECK(t.wait_ns == 0);
    CHECK(t.wire_bytes == 0);
  }
  static const LaneCounters zero{};
  for (const auto& lane : pc->lanes) CHECK(std::memcmp(&lane, &zero, sizeof zero) == 0);
  SECTION("counting resumes from zero") {
    lane_add(pc->lanes[3].by_call[0].bytes, 10);
    CHECK(counters_total(*pc, CallId::read).bytes == 10);
  }
}

TEST_CASE("counters: lane_add adds, wraps and subtracts", "[counters]") {
  struct Row {
    uint64_t start, add, want;
  };
  const Row rows[] = {{0, 1, 1},
                      {41, 1, 42},
                      {0, UINT64_MAX, UINT64_MAX},
                      {UINT64_MAX, 1, 0},  // modulo 2^64, like any unsigned add
                      {uint64_t{1} << 32, uint64_t{1} << 32, uint64_t{1} << 33},
                      {5, 0, 5}};
  for (const Row& r : rows) {
    uint64_t slot = r.start;
    lane_add(slot, r.add);
    CHECK(slot == r.want);
    CHECK(lane_load(slot) == r.want);
  }
  SECTION("signed slots, as a thread's credit") {
    int64_t credit = 100;
    lane_add(credit, -250);
    CHECK(credit == -150);
    lane_add(credit, 1048);
    CHECK(credit == 898);
    lane_add(credit, INT64_MIN + 1);
    CHECK(credit == INT64_MIN + 899);
  }
  SECTION("a sequence of adds") {
    uint64_t slot = 0;
    for (uint64_t i = 1; i <= 1000; ++i) lane_add(slot, i);
    CHECK(slot == 500500);
  }
}

TEST_CASE("counters: threads on their own lanes total exactly", "[counters]") {
  auto pc = fresh();
  constexpr unsigned kThreads = 4;
  constexpr uint64_t kCalls = 100'000;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < kThreads; ++t)
    ts.emplace_back([&pc, t] {
      CallLane& mine = pc->lanes[t].by_call[static_cast<size_t>(CallId::write)];
      for (uint64_t i = 0; i < kCalls; ++i) {
        lane_add(mine.calls, 1);
        lane_add(mine.bytes, t + 1);
      }
      pc->throttled[static_cast<size_t>(CallId::write)].fetch_add(1);
    });
  for (auto& t : ts) t.join();
  CallTotals total = counters_total(*pc, CallId::write);
  CHECK(total.calls == kThreads * kCalls);
  CHECK(total.bytes == kCalls * (1 + 2 + 3 + 4));
  CHECK(total.throttled == kThreads);
}
