// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/shm_abi.h and shm/shm_check, shm/shm_name: the
// segment's layout at run time (the twin of the header's static_asserts), header
// initialisation and the library's trust checks, segment names.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>

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

TEST_CASE("shm check: a fresh header passes, each kind of damage is caught") {
  auto seg = std::make_unique<ShmSegment>();
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment)) != nullptr);  // all zero: no magic
  shm_header_init(*seg, ShmScope::Service, 1000, "video", 42);
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment)) == nullptr);
  CHECK(seg->limits.seq.load() == 2);
  CHECK(std::string(seg->header.service) == "video");
  CHECK(shm_header_problem(*seg, 10) != nullptr);                        // truncated below the header
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment) - 64) != nullptr);   // truncated slots
  seg->header.version = BONSAI_ABI_VERSION + 1;
  CHECK(std::string(shm_header_problem(*seg, sizeof(ShmSegment))).find("version") != std::string::npos);
  seg->header.version = BONSAI_ABI_VERSION;
  seg->header.fingerprint ^= 1;
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment)) != nullptr);
  seg->header.fingerprint ^= 1;
  seg->header.scope.store(7);
  CHECK(shm_header_problem(*seg, sizeof(ShmSegment)) != nullptr);
  seg->header.scope.store(0);
  seg->header.magic = 0x1234;
  CHECK(std::string(shm_header_problem(*seg, sizeof(ShmSegment))).find("magic") != std::string::npos);
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
