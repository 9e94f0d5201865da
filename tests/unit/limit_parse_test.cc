// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/abi/limit_parse: the BONSAI_LIMITS language. Every unit,
// option, group and joining form; every error with where it points and what it says;
// rule_format round trips; size_parse and rate_parse. Table-driven.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <string_view>

#include "abi/limit_parse.h"

using namespace bonsai;

namespace {

constexpr uint64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024;
constexpr uint8_t kSock = 1u << static_cast<unsigned>(FdKind::Socket);
constexpr uint8_t kFile = 1u << static_cast<unsigned>(FdKind::File);
constexpr uint8_t kPipe = 1u << static_cast<unsigned>(FdKind::Pipe);

CallMask m(const char* name) { return call_mask_from_name(name); }

// Parses text that must be valid and holds one rule.
Rule parse_one(std::string_view text) {
  LimitSet set;
  ParseError err;
  INFO("input: '" << std::string(text) << "'");
  bool ok = limit_parse(text, set, err);
  INFO("error: " << err.message << " at " << err.offset);
  REQUIRE(ok);
  REQUIRE(set.count == 1);
  return set.rules[0];
}

// A text of `n` one-call rules that share no call: one per call name while there
// are names enough ("read=1/s,pread=2/s,..."), else one per (call, fd kind)
// ("read=1/s:fd=socket,read=2/s:fd=file,...", at most 3 x kCallCount).
std::string many_rules(size_t n) {
  static const char* const kKinds[] = {"socket", "file", "pipe"};
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ',';
    size_t call = n <= kCallCount ? i : i / 3;
    s += std::string(call_name(static_cast<CallId>(call))) + "=" + std::to_string(i + 1) + "/s";
    if (n > kCallCount) s += std::string(":fd=") + kKinds[i % 3];
  }
  return s;
}
// The text of rule `i` of many_rules(n).
std::string rule_of_many(size_t n, size_t i) {
  std::string all = many_rules(n) + ",";
  size_t at = 0;
  for (size_t k = 0; k < i; ++k) at = all.find(',', at) + 1;
  return all.substr(at, all.find(',', at) - at);
}

bool same_rule(const Rule& a, const Rule& b) {
  return a.calls == b.calls && a.rate == b.rate && a.burst == b.burst && a.unit == b.unit &&
         a.fd_mask == b.fd_mask;
}

}  // namespace

TEST_CASE("limit_parse: every rate unit", "[limit_parse]") {
  struct Row {
    const char* rate;
    uint64_t value;
    RateUnit unit;
  };
  const Row rows[] = {
      {"1B/s", 1, RateUnit::Bytes},
      {"1500B/s", 1500, RateUnit::Bytes},
      {"1KB/s", 1000, RateUnit::Bytes},
      {"1kB/s", 1000, RateUnit::Bytes},
      {"8MB/s", 8'000'000, RateUnit::Bytes},
      {"2GB/s", 2'000'000'000, RateUnit::Bytes},
      {"1TB/s", 1'000'000'000'000, RateUnit::Bytes},
      {"0.5TB/s", 500'000'000'000, RateUnit::Bytes},
      {"64KiB/s", 64 * KiB, RateUnit::Bytes},
      {"10MiB/s", 10 * MiB, RateUnit::Bytes},
      {"1GiB/s", GiB, RateUnit::Bytes},
      {"0.5TiB/s", TiB / 2, RateUnit::Bytes},
      {"1.5MiB/s", 3 * MiB / 2, RateUnit::Bytes},
      {"2.25KB/s", 2250, RateUnit::Bytes},
      {"0.001GB/s", 1'000'000, RateUnit::Bytes},
      {"100.0MiB/s", 100 * MiB, RateUnit::Bytes},
      {"1.000000001GB/s", 1'000'000'001, RateUnit::Bytes},
      {"200/s", 200, RateUnit::Calls},
      {"1/s", 1, RateUnit::Calls},
      {"1000000000000/s", kMaxRate, RateUnit::Calls},
      {"2.5/s", 3, RateUnit::Calls},  // the whole rate rounded up; kept exactly (rate_fraction_test.cc)
  };
  for (const Row& r : rows) {
    std::string text = std::string(r.unit == RateUnit::Bytes ? "read" : "openat") + "=" + r.rate;
    INFO(text);
    Rule rule = parse_one(text);
    CHECK(rule.rate == r.value);
    CHECK(rule.unit == r.unit);
    CHECK(rule.burst == 0);
    CHECK(rule.fd_mask == kAnyFd);
  }
}

TEST_CASE("limit_parse: burst and fd options", "[limit_parse]") {
  struct Row {
    const char* text;
    uint64_t burst;
    uint8_t fd_mask;
  };
  const Row rows[] = {
      {"write=8MB/s:burst=256KiB", 256 * KiB, kAnyFd},
      {"write=8MB/s:burst=1.5MB", 1'500'000, kAnyFd},
      {"write=8MB/s:burst=4096", 4096, kAnyFd},
      {"write=8MB/s:fd=socket", 0, kSock},
      {"write=8MB/s:fd=file", 0, kFile},
      {"write=8MB/s:fd=pipe", 0, kPipe},
      {"write=8MB/s:burst=64KiB:fd=socket", 64 * KiB, kSock},
      {"write=8MB/s:fd=pipe:burst=1MiB", MiB, kPipe},
      {" write = 8MB/s : burst = 2KiB : fd = file ", 2 * KiB, kFile},
      {"openat=200/s:burst=50", 50, kAnyFd},
  };
  for (const Row& r : rows) {
    Rule rule = parse_one(r.text);
    CHECK(rule.burst == r.burst);
    CHECK(rule.fd_mask == r.fd_mask);
  }
}

TEST_CASE("limit_parse: call sets, groups and several rules", "[limit_parse]") {
  struct Row {
    const char* text;
    CallMask calls;
  };
  const Row rows[] = {
      {"read=1MiB/s", m("read")},
      {"read+pread=1MiB/s", m("read") | m("pread")},
      {"read + pread + fread=1MiB/s", m("read") | m("pread") | m("fread")},
      {"reads=1MiB/s", m("reads")},
      {"writes=1MiB/s", m("writes")},
      {"reads+writes=1MiB/s", m("reads") | m("writes")},
      {"reads+openat=10/s", m("reads") | m("openat")},
      {"open+openat+creat=200/s", m("open") | m("openat") | m("creat")},
      {"\tsend+sendfile\t=\t8MB/s\t", m("send") | m("sendfile")},
  };
  for (const Row& r : rows) CHECK(parse_one(r.text).calls == r.calls);

  SECTION("a docs/reference/limits.md-style example, rules in order of appearance") {
    LimitSet set;
    ParseError err;
    REQUIRE(limit_parse("read+pread=10MiB/s,send+sendfile=8MB/s:burst=256KiB,openat=200/s", set, err));
    REQUIRE(set.count == 3);
    CHECK(set.rules[0].calls == (m("read") | m("pread")));
    CHECK(set.rules[0].rate == 10 * MiB);
    CHECK(set.rules[1].calls == (m("send") | m("sendfile")));
    CHECK(set.rules[1].rate == 8'000'000);
    CHECK(set.rules[1].burst == 256 * KiB);
    CHECK(set.rules[2].calls == m("openat"));
    CHECK(set.rules[2].unit == RateUnit::Calls);
    CHECK(set.rules[2].rate == 200);
  }
  SECTION("empty items and spaces between rules are skipped") {
    LimitSet set;
    ParseError err;
    REQUIRE(limit_parse(" read=1MiB/s , ,write=2MiB/s, ", set, err));
    REQUIRE(set.count == 2);
    CHECK(set.rules[1].calls == m("write"));
  }
  SECTION("one call in two rules on different fd kinds") {
    LimitSet set;
    ParseError err;
    REQUIRE(limit_parse("write=1MiB/s:fd=socket,write=2MiB/s:fd=file,writes=3MiB/s:fd=pipe", set, err));
    CHECK(set.count == 3);
  }
  SECTION("exactly kMaxRules rules") {
    LimitSet set;
    ParseError err;
    REQUIRE(limit_parse(many_rules(kMaxRules), set, err));
    REQUIRE(set.count == kMaxRules);
    CHECK(set.rules[kMaxRules - 1].calls == call_bit(static_cast<CallId>((kMaxRules - 1) / 3)));
    CHECK(set.rules[kMaxRules - 1].rate == kMaxRules);
  }
  SECTION("one rule per call name, for every call name (issue 8, item 12)") {
    LimitSet set;
    ParseError err;
    INFO(err.message);
    REQUIRE(limit_parse(many_rules(kCallCount), set, err));
    REQUIRE(set.count == kCallCount);
    for (size_t c = 0; c < kCallCount; ++c) CHECK(set.rules[c].calls == call_bit(static_cast<CallId>(c)));
    BucketTable table;
    REQUIRE(bucket_table_build(set, table, nullptr));
    for (size_t c = 0; c < kCallCount; ++c) CHECK(table.bucket_of[c][0] == c);
  }
}

TEST_CASE("limit_parse: every error points at the offending text and names it", "[limit_parse]") {
  struct Row {
    std::string input;
    const char* at;            // the offending text: err.offset/length must cover it
    bool last;                 // its last occurrence in input (else the first)
    const char* says[2];       // the message contains these
    const char* never = nullptr;  // ... and not this
  };
  const std::string too_many = many_rules(kMaxRules + 1);
  const std::string rule_over = rule_of_many(kMaxRules + 1, kMaxRules);
  const std::string at_most = "at most " + std::to_string(kMaxRules);
  const Row rows[] = {
      // unknown calls
      {"wirte=1MiB/s", "wirte", false, {"unknown call 'wirte'", "did you mean 'write'"}},
      {"read+preed=1MiB/s", "preed", false, {"unknown call 'preed'", "did you mean 'pread'"}},
      {"read+xyzzy=1MiB/s", "xyzzy", false, {"unknown call 'xyzzy'", nullptr}, "did you mean"},
      {"=1MiB/s", "=", false, {"missing call name", nullptr}},
      {"read+read=1MiB/s", "read", true, {"'read'", "twice"}},
      {"reads+pread=1MiB/s", "pread", false, {"'pread'", "twice"}},
      {"read", "read", false, {"'read'", "=RATE"}},
      {"read=1MiB/s,write", "write", false, {"'write'", "=RATE"}},
      // rates and units
      {"read=10XB/s", "XB", false, {"unknown unit 'XB'", nullptr}},
      {"read=10mib/s", "mib", false, {"unknown unit 'mib'", nullptr}},
      {"read=10PiB/s", "PiB", false, {"unknown unit 'PiB'", nullptr}},
      {"read=10MiB", "10MiB", false, {"'10MiB'", "/s"}},
      {"read=10MiB/sec", "10MiB/sec", false, {"'10MiB/sec'", "/s"}},
      {"read=", "", false, {"/s", nullptr}},
      {"read=0/s", "0/s", false, {"'0/s'", "> 0"}},
      {"read=0MiB/s", "0MiB/s", false, {"'0MiB/s'", "> 0"}},
      {"openat=0.0004/s", "0.0004/s", false, {"'0.0004/s'", "slowest rate"}},
      {"openat=0.4000001/s", "0.4000001/s", false, {"'0.4000001/s'", "cannot be kept exactly"}},
      {"read=2TB/s", "2TB/s", false, {"'2TB/s'", "too large"}},
      {"read=1TiB/s", "1TiB/s", false, {"'1TiB/s'", "too large"}},
      {"openat=1000000000001/s", "1000000000001/s", false, {"'1000000000001/s'", "too large"}},
      {"read=abc/s", "abc/s", false, {"bad rate 'abc/s'", nullptr}},
      {"read=/s", "/s", false, {"bad rate '/s'", nullptr}},
      {"read=-1MiB/s", "-1MiB/s", false, {"'-1MiB/s'", nullptr}},
      {"read=1.0000000001MiB/s", "1.0000000001MiB/s", false, {"'1.0000000001MiB/s'", nullptr}},
      {"read=99999999999999999999999/s", "99999999999999999999999/s", false, {"'99999999999999999999999/s'", nullptr}},
      // options
      {"write=1MiB/s:burst=abc", "abc", false, {"bad burst 'abc'", nullptr}},
      {"write=1MiB/s:burst=0", "0", true, {"bad burst '0'", nullptr}},
      {"write=1MiB/s:burst=2PiB", "2PiB", false, {"bad burst '2PiB'", nullptr}},
      {"write=1MiB/s:burst=2000TiB", "2000TiB", false, {"bad burst '2000TiB'", nullptr}},
      {"write=1MiB/s:burst=", "burst=", false, {"bad burst", nullptr}},
      {"write=1MiB/s:burst", "burst", false, {"bad burst", nullptr}},
      {"write=1MiB/s:fd=tcp", "tcp", false, {"bad fd kind 'tcp'", "socket"}},
      {"write=1MiB/s:fd=", "fd=", false, {"bad fd kind", nullptr}},
      {"write=1MiB/s:fd=none", "none", false, {"bad fd kind 'none'", nullptr}},
      {"write=1MiB/s:rate=5", "rate", false, {"unknown option 'rate'", nullptr}},
      {"write=1MiB/s:fd=pipe:on=socket", "on", true, {"unknown option 'on'", nullptr}},
      // a call in two rules, directly, through a group, on overlapping fd kinds
      {"write=1MiB/s,write=2MiB/s", "write=2MiB/s", false, {"'write'", nullptr}},
      {"write=1MiB/s,writes=2MiB/s", "writes=2MiB/s", false, {"'write'", nullptr}},
      {"reads=1MiB/s, fread=5MB/s", "fread=5MB/s", false, {"'fread'", nullptr}},
      {"send=1MiB/s:fd=socket,writes=2MiB/s", "writes=2MiB/s", false, {"'send'", nullptr}},
      {"read=1MiB/s,openat=5/s,pread+openat=9/s", "pread+openat=9/s", false, {"'openat'", nullptr}},
      // byte rates on metadata calls
      {"openat=1MiB/s", "openat", false, {"'openat'", "200/s"}},
      {"write+close=1MiB/s", "write+close", false, {"'write+close'", "moves no data"}},
      // too many rules
      {too_many, rule_over.c_str(), false, {"too many rules", at_most.c_str()}},
      // an option given twice is an error, not "the last wins" (issue 8, item 12)
      {"write=1MiB/s:fd=socket:fd=file", "fd=file", false, {"'fd'", "twice"}},
      {"write=1MiB/s:burst=1MiB:fd=pipe:burst=2MiB", "burst=2MiB", false, {"'burst'", "twice"}},
      {"read=1MiB/s,write=1MiB/s:fd=socket: fd = socket", "fd = socket", false, {"'fd'", "twice"}},
  };
  for (const Row& r : rows) {
    INFO("input: '" << r.input << "'");
    LimitSet set;
    ParseError err;
    REQUIRE_FALSE(limit_parse(r.input, set, err));
    INFO("message: " << err.message << " offset " << err.offset << " length " << err.length);
    std::string_view at = r.at;
    size_t want = at.empty() ? r.input.size() : r.last ? r.input.rfind(at) : r.input.find(at);
    REQUIRE(want != std::string::npos);
    CHECK(err.offset == want);
    CHECK(err.length == (at.empty() ? 1 : at.size()));
    CHECK(std::strlen(err.message) < sizeof err.message);
    std::string msg = err.message;
    for (const char* s : r.says)
      if (s) CHECK_THAT(msg, Catch::Contains(s));
    if (r.never) CHECK_THAT(msg, !Catch::Contains(r.never));
  }
}

TEST_CASE("limit_parse: empty input is an error at offset 0", "[limit_parse]") {
  for (const char* text : {"", "   ", ",", " , ,\t"}) {
    INFO("input: '" << text << "'");
    LimitSet set;
    ParseError err;
    REQUIRE_FALSE(limit_parse(text, set, err));
    CHECK(err.offset == 0);
    CHECK(err.length <= std::max<size_t>(1, std::strlen(text)));
    CHECK_THAT(std::string(err.message), Catch::Contains("no rules"));
  }
}

TEST_CASE("rule_format: canonical text of a rule", "[limit_parse]") {
  struct Row {
    const char* in;
    const char* out;
  };
  const Row rows[] = {
      {"read+pread=10MiB/s", "read+pread=10MiB/s"},
      {"sendfile+send=8MB/s:burst=256KiB", "send+sendfile=8MB/s:burst=256KiB"},
      {"openat=200/s", "openat=200/s"},
      {"openat=1000/s:burst=50", "openat=1000/s:burst=50"},
      {"writes=1500B/s:fd=socket", "writes=1500B/s:fd=socket"},
      {"write+reads=1GB/s:fd=pipe", "reads+write=1GB/s:fd=pipe"},
      {"reads+writes=1GiB/s:fd=file", "reads+writes=1GiB/s:fd=file"},
      {"read=1.5MiB/s", "read=1536KiB/s"},
      {"read=2.5KB/s:burst=1.5KB", "read=2500B/s:burst=1500B"},
      {"fwrite=1TB/s", "fwrite=1000GB/s"},
  };
  for (const Row& r : rows) {
    Rule rule = parse_one(r.in);
    char buf[256];
    size_t n = rule_format(rule, buf, sizeof buf);
    CHECK(std::string(buf) == r.out);
    CHECK(n == std::strlen(r.out));
  }
}

TEST_CASE("rule_format: round-trips through limit_parse", "[limit_parse]") {
  const std::string inputs[] = {
      "read+pread=10MiB/s,send+sendfile=8MB/s:burst=256KiB,openat=200/s",
      "reads=64KiB/s:burst=1MiB:fd=socket,writes=1GiB/s:fd=socket,fwrite+fread=7B/s:fd=file",
      "copy_file_range+splice+tee+vmsplice=123456789B/s:fd=pipe,mkdir+rename+unlink=3/s:burst=17",
      "recvmmsg=1.25GB/s:burst=3.5MiB,sendmmsg=999999B/s,close=1000000000000/s",
      many_rules(kMaxRules),
  };
  for (const std::string& in : inputs) {
    INFO("input: " << in);
    LimitSet set;
    ParseError err;
    REQUIRE(limit_parse(in, set, err));
    std::string joined;
    for (uint32_t i = 0; i < set.count; ++i) {
      char buf[256];
      rule_format(set.rules[i], buf, sizeof buf);
      joined += (i ? "," : "") + std::string(buf);
    }
    INFO("formatted: " << joined);
    LimitSet again;
    REQUIRE(limit_parse(joined, again, err));
    REQUIRE(again.count == set.count);
    for (uint32_t i = 0; i < set.count; ++i) CHECK(same_rule(again.rules[i], set.rules[i]));
  }
}

TEST_CASE("rule_format: truncates to the buffer and always terminates", "[limit_parse]") {
  Rule rule = parse_one("send+sendfile=8MB/s:burst=256KiB:fd=socket");
  const std::string full = "send+sendfile=8MB/s:burst=256KiB:fd=socket";
  for (size_t cap : {1u, 2u, 5u, 14u, 41u, 42u, 43u, 100u}) {
    INFO("cap " << cap);
    char buf[128];
    std::memset(buf, 'X', sizeof buf);
    size_t n = rule_format(rule, buf, cap);
    size_t want = std::min(full.size(), cap - 1);
    CHECK(n == want);
    CHECK(buf[n] == '\0');
    CHECK(std::string(buf) == full.substr(0, want));
    CHECK(buf[cap] == 'X');  // nothing written past the buffer
  }
  char untouched = 'X';
  CHECK(rule_format(rule, &untouched, 0) == 0);
  CHECK(untouched == 'X');
}

TEST_CASE("size_parse: sizes with and without units", "[limit_parse]") {
  struct Row {
    const char* text;
    bool ok;
    uint64_t bytes;
  };
  const Row rows[] = {
      {"4096", true, 4096},         {"0", true, 0},
      {"256KiB", true, 256 * KiB},  {"1.5MB", true, 1'500'000},
      {" 1KiB\t", true, KiB},       {"0.5KiB", true, 512},
      {"3kB", true, 3000},          {"2GiB", true, 2 * GiB},
      {"1TB", true, 1'000'000'000'000}, {"1024TiB", true, 1024 * TiB},
      {"1025TiB", false, 0},        {"", false, 0},
      {"abc", false, 0},            {"1XB", false, 0},
      {"-1", false, 0},             {"KiB", false, 0},
      {"1.0000000001KB", false, 0}, {"1PiB", false, 0},
  };
  for (const Row& r : rows) {
    INFO("size: '" << r.text << "'");
    uint64_t bytes = 7;
    CHECK(size_parse(r.text, bytes) == r.ok);
    if (r.ok) CHECK(bytes == r.bytes);
  }
}

TEST_CASE("rate_parse: byte and call rates", "[limit_parse]") {
  struct Row {
    const char* text;
    bool ok;
    uint64_t rate;
    RateUnit unit;
  };
  const Row rows[] = {
      {"10MiB/s", true, 10 * MiB, RateUnit::Bytes}, {"200/s", true, 200, RateUnit::Calls},
      {" 8MB/s ", true, 8'000'000, RateUnit::Bytes}, {"1.5KiB/s", true, 1536, RateUnit::Bytes},
      {"10MiB", false, 0, RateUnit::Bytes},        {"0/s", false, 0, RateUnit::Calls},
      {"2TB/s", false, 0, RateUnit::Bytes},        {"10XB/s", false, 0, RateUnit::Bytes},
      {"", false, 0, RateUnit::Bytes},             {"/s", false, 0, RateUnit::Calls},
  };
  for (const Row& r : rows) {
    INFO("rate: '" << r.text << "'");
    uint64_t rate = 0;
    RateUnit unit = RateUnit::Calls;
    CHECK(rate_parse(r.text, rate, unit) == r.ok);
    if (r.ok) {
      CHECK(rate == r.rate);
      CHECK(unit == r.unit);
    }
    ParseError err;
    CHECK(rate_parse(r.text, rate, unit, err) == r.ok);
    if (!r.ok) CHECK(err.message[0] != '\0');
  }
  ParseError err;
  uint64_t rate;
  RateUnit unit;
  REQUIRE_FALSE(rate_parse("10XB/s", rate, unit, err));
  CHECK(std::string(err.message) == "unknown unit 'XB' (use B KB kB MB GB TB KiB MiB GiB TiB, or a bare count/s)");
  CHECK(err.offset == 2);
  REQUIRE_FALSE(rate_parse("0/s", rate, unit, err));
  CHECK(std::string(err.message) == "rate must be > 0 (got '0/s')");
}
