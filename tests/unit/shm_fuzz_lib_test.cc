// SPDX-License-Identifier: MIT
// Issue 8, item 3 (library side): a segment fuzzer. A valid segment in a temporary
// file is corrupted (a sweep of every 8-byte word of its header, limits, buckets,
// exited totals and first slots with 0, 1, -1, 2^62 and a random value; then random
// multi-word corruptions and random file sizes) and the library's readers run on
// it: header check, seqlock read, limits check, bucket table and params, bucket
// takes, slot claim/release/reclaim. No crash, no UB (ASan/UBSan build), no hang:
// each phase is bounded in time.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <random>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "abi/limit_parse.h"
#include "bucket/token_bucket.h"
#include "shm/seqlock.h"
#include "shm/shm_check.h"
#include "shm/shm_slots.h"

using namespace bonsai;

namespace {

using Clock = std::chrono::steady_clock;

struct TempSegment {
  int fd = -1;
  ShmSegment* seg = nullptr;
  TempSegment() {
    char path[] = "/tmp/bonsai-fuzz-XXXXXX";
    fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    REQUIRE(ftruncate(fd, kShmMadeSize) == 0);
    void* p = mmap(nullptr, kShmMadeSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    seg = static_cast<ShmSegment*>(p);
    shm_header_init(*seg, kShmMadeSize, ShmScope::Service, static_cast<unsigned>(getuid()), "fuzz", 1);
    LimitSet set{};
    ParseError err;
    REQUIRE(limit_parse("write+pwrite=1MiB/s,read=10MiB/s:burst=64KiB:fd=socket,openat=100/s", set, err));
    seqlock_write(seg->limits, set, 2);
  }
  ~TempSegment() {
    munmap(seg, kShmMadeSize);
    close(fd);
  }
};

// What the library does with a segment it maps (shm_attach, the limits watch, the
// wait path, fork and exit), on whatever the segment holds. @return a checksum so
// that nothing is optimised away.
uint64_t exercise(ShmSegment& seg, size_t file_size) {
  uint64_t sum = 0;
  if (shm_header_problem(seg, file_size, std::min<size_t>(file_size, kShmMadeSize))) return 1;
  LimitSet set;
  uint64_t seq = 0;
  if (seqlock_read(seg.limits, set, seq, 50)) {
    if (!limits_problem(set)) {
      BucketTable table;
      REQUIRE(bucket_table_build(set, table, nullptr));
      const uint64_t now = 1'000'000'000'000ull;
      for (uint32_t r = 0; r < set.count; ++r) {
        BucketParams p = bucket_params(set.rules[r]);
        uint64_t tat = bucket_take(seg.buckets[r], p, credit_refill_units(p, -p.batch), now);
        uint64_t deadline = bucket_eligible(p, tat, now, 2'000'000);
        // A wait is never longer than max_ahead plus this take, whatever the clock held.
        REQUIRE((deadline == 0 || deadline - now <= p.max_ahead_ns + bucket_cost_ns(p, 2 * p.batch)));
        sum += tat;
      }
      for (size_t c = 0; c < kCallCount; ++c)
        for (size_t k = 0; k < kFdKindCount; ++k) {
          uint8_t b = table.bucket_of[c][k];
          REQUIRE((b == kNoBucket || b < set.count));
        }
    }
  }
  ShmSlot* slot = slot_claim(seg, static_cast<int>(getpid()), 12345, "fuzz", seq, 1);
  if (slot) {
    REQUIRE(slot >= seg.slots);
    REQUIRE(slot < seg.slots + kMaxSlots);
    sum += slot_index(seg, *slot);
    slot_release(seg, *slot);
  }
  return sum;
}

}  // namespace

TEST_CASE("shm fuzz (library): a sweep of every word of the header, limits, buckets and slots", "[shm_fuzz]") {
  TempSegment t;
  // The words before the slots, and the identity lines of the first and last slot.
  std::vector<size_t> words;
  for (size_t off = 0; off < offsetof(ShmSegment, slots); off += 8) words.push_back(off);
  for (size_t s : {size_t{0}, size_t{1}, size_t{kMaxSlots - 1}})
    for (size_t off = 0; off < 64; off += 8) words.push_back(offsetof(ShmSegment, slots) + s * sizeof(ShmSlot) + off);
  const size_t region = offsetof(ShmSegment, slots) + sizeof(ShmSlot) * 2;
  std::vector<char> pristine(region);
  std::memcpy(pristine.data(), t.seg, region);
  std::mt19937_64 rng(8);
  const uint64_t values[] = {0, 1, UINT64_MAX, uint64_t{1} << 62, 0x8000000000000000ull};
  auto start = Clock::now();
  uint64_t sum = 0, runs = 0;
  auto* base = reinterpret_cast<unsigned char*>(t.seg);
  for (size_t off : words) {
    for (size_t i = 0; i <= std::size(values); ++i) {
      uint64_t v = i < std::size(values) ? values[i] : rng();
      uint64_t saved;
      std::memcpy(&saved, base + off, 8);
      __atomic_store_n(reinterpret_cast<uint64_t*>(base + off), v, __ATOMIC_RELAXED);
      sum += exercise(*t.seg, kShmMadeSize);
      ++runs;
      std::memcpy(base, pristine.data(), region);
      std::memcpy(base + off, &saved, 8);  // the last slot's line lies outside `region`
    }
    REQUIRE(Clock::now() - start < std::chrono::seconds(60));  // a hang would show here
  }
  INFO("runs " << runs << " sum " << sum);
  CHECK(runs == words.size() * 6);
}

TEST_CASE("shm fuzz (library): random corruptions and file sizes", "[shm_fuzz]") {
  TempSegment t;
  const size_t region = offsetof(ShmSegment, slots) + sizeof(ShmSlot) * 2;
  std::vector<char> pristine(region);
  std::memcpy(pristine.data(), t.seg, region);
  std::mt19937_64 rng(0xB0A5);
  auto* base = reinterpret_cast<unsigned char*>(t.seg);
  const size_t limits_off = offsetof(ShmSegment, limits), limits_end = offsetof(ShmSegment, buckets);
  auto start = Clock::now();
  int runs = 0;
  for (; runs < 3000 && Clock::now() - start < std::chrono::seconds(3); ++runs) {
    int n = 1 + static_cast<int>(rng() % 16);
    for (int i = 0; i < n; ++i) {
      // Half the hits in the limits (where most checks are), the rest anywhere in front.
      size_t off = (rng() & 1) ? limits_off + rng() % (limits_end - limits_off) : rng() % region;
      switch (rng() % 4) {
        case 0: base[off] = static_cast<unsigned char>(rng()); break;
        case 1: base[off] ^= static_cast<unsigned char>(1u << (rng() % 8)); break;
        case 2: if (off + 8 <= region) { uint64_t v = rng(); std::memcpy(base + off, &v, 8); } break;
        default: if (off + 4 <= region) { uint32_t v = static_cast<uint32_t>(rng() % 64); std::memcpy(base + off, &v, 4); }
      }
    }
    // Keep the magic and sizes valid in most runs so that the deeper readers run.
    if (rng() % 4) std::memcpy(base, pristine.data(), sizeof(ShmHeader));
    size_t size = (rng() % 8) ? kShmMadeSize : rng() % (2 * kShmMadeSize);
    exercise(*t.seg, size);
    std::memcpy(base, pristine.data(), region);
  }
  CHECK(runs > 100);
}
