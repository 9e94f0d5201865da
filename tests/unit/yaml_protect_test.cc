// SPDX-License-Identifier: MIT
// `protect:` and `floor:` (issue 52): parsed strictly with the line and column of each
// problem, and the combinations the controller could not hold refused with the reason.
#include <catch2/catch.hpp>

#include <string>

#include "config/yaml_load.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

std::vector<std::string> errors(const std::string& text) {
  std::vector<Diag> diags;
  yaml_load_string(text, "p.yaml", diags);
  std::vector<std::string> out;
  for (const auto& d : diags) out.push_back(diag_format(d));
  return out;
}

const char* kGood = R"(version: 1
services:
  db:
    protect:
      calls: [pread]
      p99: 2500us
      squeeze: [batch]
  batch:
    limits:
      - calls: [reads]
        rate: 4GB/s
        floor: 5MB/s
      - calls: [write]
        rate: 100MB/s
)";

}  // namespace

TEST_CASE("protect: the issue's example loads, floors given and defaulted") {
  std::vector<Diag> diags;
  Config cfg = yaml_load_string(kGood, "p.yaml", diags);
  REQUIRE(diags.empty());
  const ServiceConfig* db = cfg.find("db");
  const ServiceConfig* batch = cfg.find("batch");
  REQUIRE(db);
  REQUIRE(batch);
  CHECK(db->protect.present);
  CHECK(db->protect.calls == call_bit(CallId::pread));
  CHECK(db->protect.p99_ns == 2'500'000);
  CHECK(db->protect.squeeze == std::vector<std::string>{"batch"});
  REQUIRE(batch->rule_floors.size() == 2);
  CHECK(batch->rule_floors[0] == 5'000'000);
  CHECK(batch->rule_floors[1] == 1'000'000);  // 1% of 100MB/s
  CHECK_FALSE(batch->protect.present);
}

TEST_CASE("protect: bad values are reported where they are") {
  std::string base = "version: 1\nservices:\n  b:\n    limits: [{calls: read, rate: 10MB/s}]\n  a:\n    protect:\n";
  CHECK(errors(base + "      calls: [pred]\n      p99: 1ms\n      squeeze: [b]\n") ==
        std::vector<std::string>{"p.yaml:7:15: unknown call 'pred' (did you mean 'pread'?)"});
  CHECK(errors(base + "      calls: [pread]\n      p99: 1parsec\n      squeeze: [b]\n") ==
        std::vector<std::string>{"p.yaml:8:12: bad p99 '1parsec' (a duration like 2500us or 3ms, 10us to 10s)"});
  CHECK(errors(base + "      calls: [pread]\n      p99: 1us\n      squeeze: [b]\n").size() == 1);
  CHECK(errors(base + "      calls: [pread]\n      p99: 1ms\n      squeeze: [b]\n      pp99: 1\n") ==
        std::vector<std::string>{"p.yaml:10:7: unknown key 'pp99' in protect (did you mean 'p99'?)"});
  CHECK(errors(base + "      calls: [pread]\n      squeeze: [b]\n") ==
        std::vector<std::string>{"p.yaml:7:7: 'protect' needs 'p99' (the target, like 2500us)"});
  CHECK(errors(base + "      calls: [pread]\n      p99: 1ms\n      squeeze: [b, b]\n") ==
        std::vector<std::string>{"p.yaml:9:20: service 'b' named twice in squeeze"});
  CHECK(errors("version: 1\nservices:\n  a:\n    protect: 3\n") ==
        std::vector<std::string>{"p.yaml:4:14: 'protect' must be a mapping (calls, p99, squeeze)"});
}

TEST_CASE("protect: check refuses what the controller cannot hold, with the reason") {
  std::string head = "version: 1\nservices:\n  a:\n    protect: {calls: [pread], p99: 1ms, squeeze: [";
  auto e = [&](const std::string& squeeze, const std::string& rest) { return errors(head + squeeze + "]}\n" + rest); };
  CHECK(e("a", "") == std::vector<std::string>{
                          "p.yaml:4:51: service 'a' squeezes itself (its caps would fall with its own latency)"});
  CHECK(e("nope", "") == std::vector<std::string>{"p.yaml:4:51: squeezed service 'nope' is not defined in this file"});
  CHECK(e("b", "  b:\n") == std::vector<std::string>{"p.yaml:4:51: service 'b' has no limits: there is no cap to lower"});
  CHECK(e("b", "  b:\n    limits: [{calls: read, rate: 10MB/s}]\n  c:\n    protect: {calls: [read], p99: 1ms, "
               "squeeze: [b]}\n")
            .size() == 1);  // 'b' is already squeezed by 'a'
  CHECK(e("b", "  b:\n    limits: [{calls: read, rate: 10MB/s}]\n    protect: {calls: [read], p99: 1ms, squeeze: [a]}\n")
            .size() == 2);  // each protected, each squeezed
  CHECK(e("b", "  b:\n    limits: [{calls: read, rate: 10MB/s}]\n    fleet: {store: 'redis://127.0.0.1:6379'}\n") ==
        std::vector<std::string>{"p.yaml:4:51: service 'b' has fleet caps: its rates are leased from the store, not "
                                 "lowered on one host"});
  CHECK(e("b", "  b:\n    limits: [{calls: read, rate: 10MB/s}]\n").empty());
}

TEST_CASE("floor: in the rate's unit, at most the rate, not on the host capacity") {
  std::string head = "version: 1\nservices:\n  b:\n    limits:\n      - calls: read\n        rate: 10MB/s\n";
  CHECK(errors(head + "        floor: 20MB/s\n") ==
        std::vector<std::string>{"p.yaml:7:16: floor '20MB/s' is above the rate (the controller moves the rule between "
                                 "its floor and its rate)"});
  CHECK(errors(head + "        floor: 20/s\n") ==
        std::vector<std::string>{"p.yaml:7:16: floor '20/s' is not in the rate's unit"});
  CHECK(errors(head + "        floor: fast\n").size() == 1);
  CHECK(errors(head + "        floor: 10MB/s\n").empty());
  CHECK(errors("version: 1\nhost:\n  capacity:\n    - {calls: read, rate: 1GB/s, floor: 1MB/s}\nservices: {}\n")
            .size() == 1);
}
