// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/bucket_table: the (call, fd kind) -> rule lookup table
// built from a LimitSet: any-fd and fd-specific rules, the fd_sensitive flag,
// conflicts (call and both rule indexes), empty cells, untrusted counts and masks.
#include <catch2/catch.hpp>

#include <cstring>
#include <initializer_list>

#include "abi/limit_parse.h"
#include "abi/limits_abi.h"

using namespace bonsai;

namespace {

constexpr uint8_t kSock = 1u << static_cast<unsigned>(FdKind::Socket);
constexpr uint8_t kFile = 1u << static_cast<unsigned>(FdKind::File);
constexpr uint8_t kPipe = 1u << static_cast<unsigned>(FdKind::Pipe);

CallMask m(const char* name) { return call_mask_from_name(name); }
size_t idx(const char* name) { return static_cast<size_t>(__builtin_ctzll(m(name))); }

Rule rule(CallMask calls, uint8_t fd_mask = kAnyFd) {
  Rule r{};
  r.calls = calls;
  r.rate = 1000;
  r.unit = RateUnit::Bytes;
  r.fd_mask = fd_mask;
  return r;
}

LimitSet set_of(std::initializer_list<Rule> rules) {
  LimitSet s{};
  for (const Rule& r : rules) s.rules[s.count++] = r;
  return s;
}

// A table filled with garbage, to see that the build overwrites every cell.
BucketTable dirty_table() {
  BucketTable t;
  std::memset(&t, 0x55, sizeof t);
  t.fd_sensitive = true;
  return t;
}

struct Row4 {
  uint8_t socket, file, pipe, none;
};
Row4 row_of(const BucketTable& t, const char* call) {
  const uint8_t* r = t.bucket_of[idx(call)];
  return {r[0], r[1], r[2], r[3]};
}
bool operator==(const Row4& a, const Row4& b) {
  return a.socket == b.socket && a.file == b.file && a.pipe == b.pipe && a.none == b.none;
}
std::ostream& operator<<(std::ostream& os, const Row4& r) {
  return os << '{' << int(r.socket) << ',' << int(r.file) << ',' << int(r.pipe) << ',' << int(r.none) << '}';
}
constexpr uint8_t N = kNoBucket;

}  // namespace

TEST_CASE("bucket_table: an empty set has no buckets", "[bucket_table]") {
  LimitSet s{};
  BucketTable t = dirty_table();
  REQUIRE(bucket_table_build(s, t, nullptr));
  CHECK_FALSE(t.fd_sensitive);
  for (const auto& row : t.bucket_of)
    for (uint8_t cell : row) CHECK(cell == kNoBucket);
}

TEST_CASE("bucket_table: rules without fd= fill every fd kind", "[bucket_table]") {
  LimitSet s = set_of({rule(m("read") | m("pread")), rule(m("writes")), rule(m("openat"))});
  BucketTable t = dirty_table();
  REQUIRE(bucket_table_build(s, t, nullptr));
  CHECK_FALSE(t.fd_sensitive);
  CHECK(row_of(t, "read") == Row4{0, 0, 0, 0});
  CHECK(row_of(t, "pread") == Row4{0, 0, 0, 0});
  CHECK(row_of(t, "openat") == Row4{2, 2, 2, 2});
  for (size_t c = 0; c < kCallCount; ++c) {
    auto id = static_cast<CallId>(c);
    uint8_t want = (call_bit(id) & m("writes")) ? 1 : (id == CallId::read || id == CallId::pread) ? 0
                   : id == CallId::openat ? 2 : N;
    INFO("call " << call_name(id));
    for (size_t k = 0; k < kFdKindCount; ++k) CHECK(t.bucket_of[c][k] == want);
  }
}

TEST_CASE("bucket_table: an fd= rule fills only its kind", "[bucket_table]") {
  struct Row {
    uint8_t fd_mask;
    Row4 want;
  };
  const Row rows[] = {{kSock, {0, N, N, N}}, {kFile, {N, 0, N, N}}, {kPipe, {N, N, 0, N}}};
  for (const Row& r : rows) {
    INFO("fd mask " << int(r.fd_mask));
    BucketTable t = dirty_table();
    REQUIRE(bucket_table_build(set_of({rule(m("send"), r.fd_mask)}), t, nullptr));
    CHECK(t.fd_sensitive);
    CHECK(row_of(t, "send") == r.want);
    CHECK(row_of(t, "write") == Row4{N, N, N, N});
  }
}

TEST_CASE("bucket_table: one call, a different rule per fd kind", "[bucket_table]") {
  LimitSet s = set_of({rule(m("write"), kSock), rule(m("write"), kFile), rule(m("writes"), kPipe),
                       rule(m("unlink"))});
  BucketTable t = dirty_table();
  REQUIRE(bucket_table_build(s, t, nullptr));
  CHECK(t.fd_sensitive);
  CHECK(row_of(t, "write") == Row4{0, 1, 2, N});
  CHECK(row_of(t, "sendfile") == Row4{N, N, 2, N});
  CHECK(row_of(t, "unlink") == Row4{3, 3, 3, 3});  // no descriptor: only any-fd rules apply
  CHECK(row_of(t, "read") == Row4{N, N, N, N});
}

TEST_CASE("bucket_table: the same table from the limit language", "[bucket_table]") {
  LimitSet s;
  ParseError err;
  REQUIRE(limit_parse("read+pread=10MiB/s, writes=8MB/s:fd=socket, write=1MiB/s:fd=file, openat=200/s", s, err));
  BucketTable t = dirty_table();
  REQUIRE(bucket_table_build(s, t, nullptr));
  CHECK(t.fd_sensitive);
  CHECK(row_of(t, "pread") == Row4{0, 0, 0, 0});
  CHECK(row_of(t, "send") == Row4{1, N, N, N});
  CHECK(row_of(t, "write") == Row4{1, 2, N, N});
  CHECK(row_of(t, "openat") == Row4{3, 3, 3, 3});
  CHECK(row_of(t, "recv") == Row4{N, N, N, N});
}

TEST_CASE("bucket_table: conflicts name the call and both rules", "[bucket_table]") {
  struct Row {
    const char* what;
    LimitSet set;
    CallId call;
    uint8_t first, second;
  };
  const Row rows[] = {
      {"same call twice", set_of({rule(m("write")), rule(m("write"))}), CallId::write, 0, 1},
      {"through a group", set_of({rule(m("read")), rule(m("openat")), rule(m("reads"))}), CallId::read, 0, 2},
      {"group first", set_of({rule(m("writes")), rule(m("tee") | m("splice"))}), CallId::splice, 0, 1},
      {"any fd against socket", set_of({rule(m("send"), kSock), rule(m("send"))}), CallId::send, 0, 1},
      {"same fd kind", set_of({rule(m("recv"), kFile), rule(m("read")), rule(m("recv"), kFile)}),
       CallId::recv, 0, 2},
      {"late rules", set_of({rule(m("read")), rule(m("pread")), rule(m("readv")), rule(m("fsync")),
                             rule(m("mkdir") | m("fsync"))}),
       CallId::fsync, 3, 4},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    BucketTable t;
    TableConflict c{CallId::count_, 99, 99};
    REQUIRE_FALSE(bucket_table_build(r.set, t, &c));
    CHECK(c.call == r.call);
    CHECK(int(c.first_rule) == int(r.first));
    CHECK(int(c.second_rule) == int(r.second));
    CHECK_FALSE(bucket_table_build(r.set, t, nullptr));  // no conflict out-parameter: still false
  }
}

TEST_CASE("bucket_table: untrusted sets never index out of range", "[bucket_table]") {
  SECTION("count beyond kMaxRules is clamped") {
    LimitSet s{};
    for (uint32_t i = 0; i < kMaxRules; ++i) s.rules[i] = rule(0);
    s.rules[kMaxRules - 1] = rule(m("tee"));
    s.count = 0xFFFFFFFF;
    BucketTable t = dirty_table();
    REQUIRE(bucket_table_build(s, t, nullptr));
    constexpr auto last = static_cast<uint8_t>(kMaxRules - 1);
    CHECK(row_of(t, "tee") == Row4{last, last, last, last});
  }
  SECTION("rules past count are ignored") {
    LimitSet s = set_of({rule(m("read"))});
    s.rules[1] = rule(m("read"));
    BucketTable t = dirty_table();
    REQUIRE(bucket_table_build(s, t, nullptr));
    CHECK(row_of(t, "read") == Row4{0, 0, 0, 0});
  }
  SECTION("call bits past the table and fd bits past the kinds are ignored") {
    LimitSet s = set_of({rule(CallMask{1} << 63 | m("fread"), 0xF0 | kSock)});
    BucketTable t = dirty_table();
    REQUIRE(bucket_table_build(s, t, nullptr));
    CHECK(row_of(t, "fread") == Row4{0, N, N, N});
    CHECK(t.fd_sensitive);
  }
  SECTION("a rule with no fd kind fills nothing") {
    LimitSet s = set_of({rule(m("read"), 0)});
    BucketTable t = dirty_table();
    REQUIRE(bucket_table_build(s, t, nullptr));
    CHECK(row_of(t, "read") == Row4{N, N, N, N});
    CHECK_FALSE(t.fd_sensitive);
  }
}
