// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/calls: the call table of the limit language (names,
// directions, the reads/writes groups, did-you-mean suggestions, fd kind names),
// checked against the lists written in docs/reference/limits.md and docs/reference/config.md ("Call names").
#include <catch2/catch.hpp>

#include <string>
#include <string_view>

#include "abi/calls.h"
#include "abi/limit_parse.h"

using namespace bonsai;

namespace {

// docs/reference/limits.md, "Call names": data calls by direction, then metadata calls.
constexpr std::string_view kReadCalls[] = {"read",     "pread",   "readv",    "preadv", "recv",
                                           "recvfrom", "recvmsg", "recvmmsg", "fread"};
constexpr std::string_view kWriteCalls[] = {
    "write",   "pwrite",   "writev", "pwritev", "send", "sendto",          "sendmsg",
    "sendmmsg", "sendfile", "splice", "vmsplice", "tee", "copy_file_range", "fwrite"};
constexpr std::string_view kMetaCalls[] = {"open",  "openat",    "creat",  "close",  "connect",
                                           "accept", "accept4",  "fsync",  "fdatasync", "unlink",
                                           "unlinkat", "rename", "mkdir"};

CallMask mask_of(const std::string_view* names, size_t n) {
  CallMask m = 0;
  for (size_t i = 0; i < n; ++i) m |= call_mask_from_name(names[i]);
  return m;
}

}  // namespace

TEST_CASE("calls: the table holds exactly the calls docs/reference/limits.md names", "[calls]") {
  constexpr size_t design_count = std::size(kReadCalls) + std::size(kWriteCalls) + std::size(kMetaCalls);
  CHECK(kCallCount == design_count);
  for (auto lists : {std::pair{kReadCalls, std::size(kReadCalls)}, std::pair{kWriteCalls, std::size(kWriteCalls)},
                     std::pair{kMetaCalls, std::size(kMetaCalls)}})
    for (size_t i = 0; i < lists.second; ++i) {
      INFO("name: " << lists.first[i]);
      CallMask m = call_mask_from_name(lists.first[i]);
      REQUIRE(m != 0);
      CHECK((m & (m - 1)) == 0);  // a call name names exactly one call
    }
}

TEST_CASE("calls: every name round-trips through call_mask_from_name", "[calls]") {
  CallMask seen = 0;
  for (size_t i = 0; i < kCallCount; ++i) {
    auto id = static_cast<CallId>(i);
    std::string_view name = call_name(id);
    INFO("call " << i << " '" << std::string(name) << "'");
    CHECK_FALSE(name.empty());
    CHECK(name != "?");
    CHECK(call_mask_from_name(name) == call_bit(id));
    CHECK((seen & call_bit(id)) == 0);  // ids are distinct bits
    seen |= call_bit(id);
  }
  CHECK(seen == (kCallCount == 64 ? ~CallMask{0} : (CallMask{1} << kCallCount) - 1));
}

TEST_CASE("calls: unknown names resolve to no call", "[calls]") {
  const char* unknown[] = {"", "READ", "Write", "read64", "pread64", "sendfile64", "fwrite_unlocked",
                           "read ", " read", "reads+writes", "r", "all", "preadv2", "fputs"};
  for (const char* n : unknown) {
    INFO("name: '" << n << "'");
    CHECK(call_mask_from_name(n) == 0);
  }
}

TEST_CASE("calls: out-of-range ids are harmless", "[calls]") {
  CHECK(call_name(CallId::count_) == "?");
  CHECK(call_name(static_cast<CallId>(200)) == "?");
  CHECK(call_dir(static_cast<CallId>(200)) == CallDir::Meta);
  CHECK_FALSE(call_is_data(CallId::count_));
}

TEST_CASE("calls: directions match docs/reference/limits.md", "[calls]") {
  struct Row {
    const std::string_view* names;
    size_t n;
    CallDir dir;
  };
  const Row rows[] = {{kReadCalls, std::size(kReadCalls), CallDir::Read},
                      {kWriteCalls, std::size(kWriteCalls), CallDir::Write},
                      {kMetaCalls, std::size(kMetaCalls), CallDir::Meta}};
  for (const Row& r : rows)
    for (size_t i = 0; i < r.n; ++i) {
      INFO("name: " << r.names[i]);
      CallMask m = call_mask_from_name(r.names[i]);
      REQUIRE(m != 0);
      auto id = static_cast<CallId>(__builtin_ctzll(m));
      CHECK(call_dir(id) == r.dir);
      CHECK(call_is_data(id) == (r.dir != CallDir::Meta));
    }
}

TEST_CASE("calls: groups hold exactly the data calls of their direction", "[calls]") {
  CallMask reads = call_mask_from_name("reads");
  CallMask writes = call_mask_from_name("writes");
  CHECK(reads == mask_of(kReadCalls, std::size(kReadCalls)));
  CHECK(writes == mask_of(kWriteCalls, std::size(kWriteCalls)));
  CHECK((reads & writes) == 0);
  CallMask meta = mask_of(kMetaCalls, std::size(kMetaCalls));
  CHECK((meta & (reads | writes)) == 0);  // metadata calls are in no group
  CHECK((meta | reads | writes) == (CallMask{1} << kCallCount) - 1);

  SECTION("zero-copy calls and fwrite count as writes, fread as a read") {
    for (const char* n : {"sendfile", "splice", "vmsplice", "tee", "copy_file_range", "fwrite"}) {
      INFO(n);
      CHECK((writes & call_mask_from_name(n)) != 0);
      CHECK((reads & call_mask_from_name(n)) == 0);
    }
    CHECK((reads & call_mask_from_name("fread")) != 0);
    CHECK((writes & call_mask_from_name("fread")) == 0);
  }
}

TEST_CASE("calls: call_name_suggest offers the nearest name", "[calls]") {
  struct Row {
    const char* typo;
    const char* want;  // "" = no suggestion
  };
  const Row rows[] = {
      {"wirte", "write"},   {"preed", "pread"},     {"reda", "read"},         {"raeds", "reads"},
      {"writess", "writes"}, {"sendfil", "sendfile"}, {"opneat", "openat"},    {"mkdri", "mkdir"},
      {"fwrit", "fwrite"},  {"copy_file_rnge", "copy_file_range"},           {"xyzzy", ""},
      {"nonsense", ""},     {"", ""},               {"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", ""},
  };
  for (const Row& r : rows) {
    INFO("typo: '" << r.typo << "'");
    CHECK(call_name_suggest(r.typo) == std::string_view{r.want});
  }
  SECTION("a known name suggests itself") {
    for (size_t i = 0; i < kCallCount; ++i) {
      std::string_view n = call_name(static_cast<CallId>(i));
      CHECK(call_name_suggest(n) == n);
    }
  }
}

TEST_CASE("calls: fd kind names", "[calls]") {
  CHECK(fd_kind_name(FdKind::Socket) == "socket");
  CHECK(fd_kind_name(FdKind::File) == "file");
  CHECK(fd_kind_name(FdKind::Pipe) == "pipe");
  CHECK(fd_kind_name(FdKind::None) == "none");
  CHECK(fd_kind_name(static_cast<FdKind>(9)) == "?");
  CHECK(static_cast<size_t>(FdKind::None) + 1 == kFdKindCount);
}

TEST_CASE("calls: `opens` is every call that opens by path, whichever the libc makes", "[calls]") {
  CallMask opens = call_mask_from_name("opens");
  CHECK(opens == (call_mask_from_name("open") | call_mask_from_name("openat") | call_mask_from_name("creat")));
  CHECK((opens & (call_mask_from_name("reads") | call_mask_from_name("writes"))) == 0);
  CHECK(call_name_suggest("openss") == "opens");
  ParseError err{};
  LimitSet set{};
  REQUIRE(limit_parse("opens=100/s", set, err));
  char buf[64];
  rule_format(set.rules[0], buf, sizeof buf);
  CHECK(std::string_view{buf} == "opens=100/s");
}
