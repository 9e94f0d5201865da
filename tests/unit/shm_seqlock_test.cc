// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/shm/seqlock: readers racing a writer never see a torn
// LimitSet (every rule of a copy belongs to one generation), the sequence only
// grows, and a writer that died holding the lock is taken over.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "abi/shm_abi.h"
#include "shm/seqlock.h"

using namespace bonsai;

namespace {

// A set whose every field encodes `gen`, so that a mix of two generations shows.
LimitSet generation(uint64_t gen) {
  LimitSet s{};
  s.count = kMaxRules;
  for (uint32_t r = 0; r < kMaxRules; ++r)
    s.rules[r] = Rule{CallMask{1} << (r % kCallCount), gen * 100 + 1, gen, RateUnit::Bytes, kAnyFd, {}};
  return s;
}

bool consistent(const LimitSet& s, uint64_t& gen) {
  if (s.count != kMaxRules) return false;
  gen = s.rules[0].burst;
  for (uint32_t r = 0; r < kMaxRules; ++r)
    if (s.rules[r].burst != gen || s.rules[r].rate != gen * 100 + 1) return false;
  return true;
}

}  // namespace

TEST_CASE("seqlock: concurrent writer and readers never see a torn set") {
  auto lim = std::make_unique<ShmLimits>();
  lim->seq.store(2);
  seqlock_write(*lim, generation(1), 0);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0}, reads{0}, backwards{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)
    readers.emplace_back([&] {
      uint64_t last_seq = 0, last_gen = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        LimitSet copy;
        uint64_t seq = 0, gen = 0;
        if (!seqlock_read(*lim, copy, seq, 100)) continue;
        reads.fetch_add(1, std::memory_order_relaxed);
        if (!consistent(copy, gen)) torn.fetch_add(1);
        if (seq < last_seq || gen < last_gen || (seq & 1)) backwards.fetch_add(1);
        last_seq = seq, last_gen = gen;
      }
    });
  auto t0 = std::chrono::steady_clock::now();
  uint64_t gen = 1, last = 0;
  while (gen < 20000 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2)) {
    ++gen;
    uint64_t seq = seqlock_write(*lim, generation(gen), gen);
    CHECK(seq > last);
    CHECK((seq & 1) == 0);
    last = seq;
  }
  // Readers keep reading after the writer stops, so each thread gets reads in.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop = true;
  for (auto& r : readers) r.join();
  CHECK(torn.load() == 0);
  CHECK(backwards.load() == 0);
  CHECK(reads.load() > 0);
  LimitSet final_set;
  uint64_t seq, g;
  REQUIRE(seqlock_read(*lim, final_set, seq, 10));
  REQUIRE(consistent(final_set, g));
  CHECK(g == gen);
  CHECK(lim->changed_unix_ns.load() == gen);
}

TEST_CASE("seqlock: readers give up while a writer holds it; a dead writer's lock is taken over") {
  auto lim = std::make_unique<ShmLimits>();
  lim->seq.store(2);
  seqlock_write(*lim, generation(3), 0);
  lim->seq.store(5);  // a writer died half-way
  LimitSet copy;
  uint64_t seq;
  CHECK_FALSE(seqlock_read(*lim, copy, seq, 50));
  auto t0 = std::chrono::steady_clock::now();
  uint64_t s = seqlock_write(*lim, generation(4), 0, 20'000'000);  // take over after 20 ms
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s == 8);
  CHECK(ms >= 15);
  CHECK(ms < 2000);
  REQUIRE(seqlock_read(*lim, copy, seq, 10));
  uint64_t g;
  CHECK(consistent(copy, g));
  CHECK(g == 4);
}
