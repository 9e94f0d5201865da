// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/shm_abi.h and shm/shm_check, shm/shm_name: the
// segment's layout at run time (the twin of the header's static_asserts), header
// initialisation and the library's trust checks, segment names.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <random>
#include <vector>

#include "abi/shm_abi.h"
#include "shm/shm_check.h"
#include "shm/shm_name.h"

using namespace bonsai;

TEST_CASE("shm layout: offsets and sizes at run time") {
  CHECK(offsetof(ShmSegment, header) == 0);
  CHECK(offsetof(ShmSegment, limits) == 64);
  CHECK(offsetof(ShmSegment, buckets) % 64 == 0);
  CHECK(offsetof(ShmSegment, slots) % 64 == 0);
  CHECK(offsetof(ShmSlot, counters) == 64);
  CHECK(offsetof(ShmSlot, lib_version) == 56);
  CHECK(sizeof(ShmSlot) == 64 + sizeof(ProcessCounters));
  CHECK(sizeof(ShmSegment) == offsetof(ShmSegment, slots) + kMaxSlots * sizeof(ShmSlot) + sizeof(ShmSlotNs));
  auto seg = std::make_unique<ShmSegment>();
  auto base = reinterpret_cast<uintptr_t>(seg.get());
  for (unsigned i = 0; i < kMaxSlots; i += 37) {
    CHECK((reinterpret_cast<uintptr_t>(&seg->slots[i]) - base) % 64 == 0);
    CHECK((reinterpret_cast<uintptr_t>(&seg->slots[i].counters) - base) % 64 == 0);
  }
  CHECK((reinterpret_cast<uintptr_t>(&seg->buckets[1]) - reinterpret_cast<uintptr_t>(&seg->buckets[0])) == 64);
  // ~10 MiB per service with 1024 slots; the file is sparse and slots are taken lowest
  // first, so only the slots in use (and the header) take memory.
  CHECK(sizeof(ShmSegment) < 12u << 20);
}

namespace {

// A segment as this build's bonsaictl makes it: the base, then the section directory.
struct Made {
  ShmSegment base;
  ShmSectionDir dir;
};
static_assert(sizeof(Made) == kShmMadeSize && offsetof(Made, dir) == kShmDirOffset);

}  // namespace

TEST_CASE("shm check: a fresh header passes, each kind of damage is caught") {
  auto made = std::make_unique<Made>();
  ShmSegment* seg = &made->base;
  const size_t n = sizeof(Made);
  CHECK(shm_header_problem(*seg, n, n) != nullptr);  // all zero: no magic
  shm_header_init(*seg, n, ShmScope::Service, 1000, "video", 42);
  CHECK(seg->header.version == BONSAI_ABI_VERSION);
  CHECK(seg->header.size == kShmMadeSize);
  CHECK(shm_header_problem(*seg, n, n) == nullptr);
  CHECK(seg->limits.seq.load() == 2);
  CHECK(std::string(seg->header.service) == "video");
  CHECK(shm_header_problem(*seg, 10, n) != nullptr);                        // truncated below the header
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment) - 64, n) != nullptr);   // truncated slots
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment), n) != nullptr);        // truncated directory
  CHECK(shm_header_problem(*seg, n, sizeof(ShmSegment)) != nullptr);        // directory not mapped
  seg->header.version = 13;
  CHECK(std::string(shm_header_problem(*seg, n, n)).find("older than 0.2.0") != std::string::npos);
  seg->header.version = BONSAI_ABI_VERSION;
  seg->header.fingerprint ^= 1;
  CHECK(shm_header_problem(*seg, n, n) != nullptr);
  seg->header.fingerprint ^= 1;
  seg->header.scope.store(7);
  CHECK(shm_header_problem(*seg, n, n) != nullptr);
  seg->header.scope.store(0);
  seg->header.magic = 0x1234;
  CHECK(std::string(shm_header_problem(*seg, n, n)).find("magic") != std::string::npos);
}

TEST_CASE("shm layout: the base is layout 14 exactly (what 0.2.0 made), read in place") {
  // The offsets 0.2.0's processes use: a change here breaks every running old process.
  CHECK(sizeof(ShmSegment) == 11295168u);
  CHECK(offsetof(ShmSegment, limits) == 64);
  CHECK(offsetof(ShmSegment, slots) == kShmBaseSize - kMaxSlots * sizeof(ShmSlot) - sizeof(ShmSlotNs));
  auto seg = std::make_unique<ShmSegment>();
  shm_header_init(*seg, sizeof(ShmSegment), ShmScope::Service, 1000, "old", 1);  // the base alone: 14
  CHECK(seg->header.version == 14);
  CHECK(seg->header.size == sizeof(ShmSegment));
  ShmSections sections{};
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment), sizeof(ShmSegment), &sections) == nullptr);
  CHECK(sections.count == 0);
  seg->header.size += 384;  // 14 with another size: not what 0.2.0 made
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment) + 384, sizeof(ShmSegment)) != nullptr);
  seg->header.size = sizeof(ShmSegment);
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment) - 8, sizeof(ShmSegment)) != nullptr);  // truncated
}

TEST_CASE("shm layout: sections are used only as listed, a tenant's directory is bounds-checked") {
  // A segment of a later layout with two sections after the directory.
  constexpr uint64_t kA = kShmMadeSize, kB = kShmMadeSize + 128, kSpan = kShmMadeSize + 256;
  std::vector<uint64_t> words(kSpan / 8);
  auto* seg = reinterpret_cast<ShmSegment*>(words.data());
  shm_header_init(*seg, kShmMadeSize, ShmScope::Service, 1000, "new", 1);
  auto* dir = reinterpret_cast<ShmSectionDir*>(reinterpret_cast<char*>(seg) + kShmDirOffset);
  seg->header.version = BONSAI_ABI_VERSION + 1;  // a newer release that only added sections
  seg->header.size = kSpan;
  dir->count = 2;
  dir->entries[0] = {1, 0, kA, 128};
  dir->entries[1] = {7, 0, kB, 128};
  ShmSections sections{};
  REQUIRE(shm_header_problem(*seg, kSpan, kSpan, &sections) == nullptr);
  CHECK(shm_section_offset(sections, static_cast<ShmSectionId>(1), 128) == kA);
  CHECK(shm_section_offset(sections, static_cast<ShmSectionId>(1), 64) == 0);  // another size: absent
  CHECK(shm_section_offset(sections, static_cast<ShmSectionId>(3), 128) == 0);  // not listed: absent
  // Each attack on the directory is refused (and never read out of bounds).
  struct Case {
    const char* what;
    ShmSectionEntry e;
  } cases[] = {
      {"past the span", {1, 0, kB, 256}},
      {"offset past the span", {1, 0, kSpan + 64, 64}},
      {"over the directory", {1, 0, kShmDirOffset, 128}},
      {"over the base", {1, 0, 64, 128}},
      {"wrapping", {1, 0, kA, ~uint64_t{0} - 32}},
      {"misaligned", {1, 0, kA + 8, 64}},
      {"overlapping the other", {1, 0, kB - 64, 128}},
      {"the same id twice", {7, 0, kA, 128}},
      {"id 0", {0, 0, kA, 128}},
      {"size 0", {1, 0, kA, 0}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    ShmSectionEntry saved = dir->entries[0];
    dir->entries[0] = c.e;
    CHECK(shm_header_problem(*seg, kSpan, kSpan, &sections) != nullptr);
    CHECK(sections.count == 0);
    dir->entries[0] = saved;
  }
  dir->count = kShmMaxSections + 1;
  CHECK(shm_header_problem(*seg, kSpan, kSpan) != nullptr);
  dir->count = 2;
  seg->header.size = kSpan + 64;  // the header claims more than the file holds
  CHECK(shm_header_problem(*seg, kSpan, kSpan) != nullptr);
  seg->header.size = kSpan;
  CHECK(shm_header_problem(*seg, kSpan, kSpan - 64) != nullptr);  // more than the caller mapped
  dir->oldest_reader = 3;
  CHECK(shm_header_problem(*seg, kSpan, kSpan) != nullptr);
  dir->oldest_reader = 15;
  CHECK(shm_header_problem(*seg, kSpan, kSpan) == nullptr);
}

TEST_CASE("shm layout: a segment no reader of this build may use says it was made by a newer bonsai") {
  auto made = std::make_unique<Made>();
  ShmSegment* seg = &made->base;
  shm_header_init(*seg, sizeof(Made), ShmScope::Service, 1000, "new", 1);
  made->dir.oldest_reader = BONSAI_ABI_VERSION + 1;
  seg->header.version = BONSAI_ABI_VERSION + 1;
  CHECK(shm_header_problem(*seg, sizeof(Made), sizeof(Made)) == kShmNewerLayout);
  made->dir.magic = 0;  // a newer directory this build cannot place
  CHECK(shm_header_problem(*seg, sizeof(Made), sizeof(Made)) == kShmNewerLayout);
  seg->header.version = BONSAI_ABI_VERSION;  // our own layout, its directory written over: the base alone
  ShmSections sections{};
  CHECK(shm_header_problem(*seg, sizeof(Made), sizeof(Made), &sections) == nullptr);
  CHECK(sections.count == 0);
  REQUIRE(sections.damage != nullptr);
  CHECK(std::string(sections.damage) == "bad magic");
  made->dir.magic = kShmDirMagic;
  made->dir.oldest_reader = 15;
  made->dir.count = kShmMaxSections + 1;
  CHECK(shm_header_problem(*seg, sizeof(Made), sizeof(Made), &sections) == nullptr);
  CHECK(std::string(sections.damage) == "too many sections");
}

TEST_CASE("host layout: 14 read in place, 15 with its directory, newer said as newer") {
  struct HostMade {
    ShmHost base;
    ShmSectionDir dir;
  };
  auto h = std::make_unique<HostMade>();
  host_header_init(h->base, sizeof(HostMade), 1000);
  CHECK(h->base.header.version == BONSAI_ABI_VERSION);
  CHECK(host_header_problem(h->base, sizeof(HostMade), sizeof(HostMade)) == nullptr);
  CHECK(host_header_problem(h->base, sizeof(ShmHost), sizeof(HostMade)) != nullptr);  // no room for the directory
  h->dir.oldest_reader = BONSAI_ABI_VERSION + 1;
  h->base.header.version = BONSAI_ABI_VERSION + 1;
  CHECK(host_header_problem(h->base, sizeof(HostMade), sizeof(HostMade)) == kShmNewerLayout);
  auto old = std::make_unique<ShmHost>();
  host_header_init(*old, sizeof(ShmHost), 1000);
  CHECK(old->header.version == 14);
  CHECK(host_header_problem(*old, sizeof(ShmHost), sizeof(ShmHost)) == nullptr);
  CHECK(sizeof(ShmHost) == 6848u);
}

TEST_CASE("shm check: garbage limits are refused") {
  LimitSet set{};
  CHECK(limits_problem(set) == nullptr);  // no rules: accounting only
  set.count = 1;
  set.rules[0] = Rule{call_bit(CallId::read), 1000, 0, RateUnit::Bytes, kAnyFd, {}};
  CHECK(limits_problem(set) == nullptr);
  set.count = kMaxRules + 1;
  CHECK(limits_problem(set) != nullptr);
  set.count = 1;
  set.rules[0].rate = 0;
  CHECK(limits_problem(set) != nullptr);
  set.rules[0].rate = 1000;
  set.rules[0].unit = static_cast<RateUnit>(9);
  CHECK(limits_problem(set) != nullptr);
  set.rules[0].unit = RateUnit::Bytes;
  set.rules[0].fd_mask = 0x30;
  CHECK(limits_problem(set) != nullptr);
  set.rules[0].fd_mask = kAnyFd;
  set.rules[0].calls = CallMask{1} << 63;
  CHECK(limits_problem(set) != nullptr);
  set.rules[0].calls = call_bit(CallId::openat);  // bytes on a metadata call
  CHECK(limits_problem(set) != nullptr);
  set.count = 2;
  set.rules[0].calls = call_bit(CallId::read);
  set.rules[1] = set.rules[0];  // read in two rules
  CHECK(limits_problem(set) != nullptr);
}

TEST_CASE("shm names: /<prefix>bonsai.<uid>.<service>, validated both ways") {
  char buf[128];
  REQUIRE(shm_segment_name(buf, sizeof buf, "t1.", 1000, "video") > 0);
  CHECK(std::string(buf) == "/t1.bonsai.1000.video");
  REQUIRE(shm_segment_path(buf, sizeof buf, "", 0, "web-1") > 0);
  CHECK(std::string(buf) == "/dev/shm/bonsai.0.web-1");
  CHECK(shm_segment_name(buf, sizeof buf, "", 1, "a/b") == 0);
  CHECK(shm_segment_name(buf, sizeof buf, "x/", 1, "a") == 0);
  CHECK(shm_segment_name(buf, 8, "", 1, "video") == 0);
  CHECK_FALSE(shm_service_name_valid(""));
  CHECK_FALSE(shm_service_name_valid(".hidden"));
  CHECK_FALSE(shm_service_name_valid(std::string(64, 'a')));
  CHECK(shm_service_name_valid(std::string(63, 'a')));
  CHECK(shm_service_of_file("t1.bonsai.1000.video", "t1.", 1000) == "video");
  CHECK(shm_service_of_file("t1.bonsai.1001.video", "t1.", 1000).empty());
  CHECK(shm_service_of_file("bonsai.1000.video", "t1.", 1000).empty());
  CHECK(shm_service_of_file("t1.bonsai.1000.", "t1.", 1000).empty());
}

TEST_CASE("shm layout: random directories are accepted only in bounds") {
  // What a tenant may write into the directory: whatever passes lies inside the span,
  // after the directory, 64-aligned and without overlap.
  constexpr uint64_t kSpan = kShmMadeSize + 4096;
  std::vector<uint64_t> words(kSpan / 8);
  auto* seg = reinterpret_cast<ShmSegment*>(words.data());
  shm_header_init(*seg, kShmMadeSize, ShmScope::Service, 1000, "rnd", 1);
  seg->header.size = kSpan;
  auto* dir = reinterpret_cast<ShmSectionDir*>(reinterpret_cast<char*>(seg) + kShmDirOffset);
  std::mt19937_64 rng(15);
  unsigned accepted = 0;
  for (int run = 0; run < 20000; ++run) {
    dir->count = static_cast<uint32_t>(rng() % (kShmMaxSections + 2));
    for (auto& e : dir->entries) {
      e.id = static_cast<uint32_t>(rng() % 6);
      // Offsets and sizes near the interesting edges, and anywhere.
      uint64_t r = rng();
      e.offset = (r & 1) ? kShmMadeSize + (rng() % 64) * 64 : (r & 2) ? rng() : rng() % (kSpan + 128);
      e.size = (r & 4) ? 64 * (1 + rng() % 16) : (r & 8) ? ~uint64_t{0} - rng() % 1024 : rng() % 8192;
    }
    ShmSections sections{};
    if (shm_header_problem(*seg, kSpan, kSpan, &sections) != nullptr) {
      CHECK(sections.count == 0);
      continue;
    }
    ++accepted;
    REQUIRE(sections.count <= kShmMaxSections);
    for (uint32_t i = 0; i < sections.count; ++i) {
      const ShmSectionEntry& e = sections.entries[i];
      CHECK(e.offset >= kShmMadeSize);
      CHECK(e.offset % 64 == 0);
      CHECK(e.size > 0);
      CHECK(e.offset + e.size <= kSpan);
      for (uint32_t j = 0; j < i; ++j) {
        const ShmSectionEntry& f = sections.entries[j];
        CHECK((e.offset + e.size <= f.offset || f.offset + f.size <= e.offset));
        CHECK(e.id != f.id);
      }
    }
  }
  CHECK(accepted > 100);  // the generator reaches valid directories too
}
