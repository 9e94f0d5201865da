// SPDX-License-Identifier: MIT
// Unit tests of bonsaictl/yaml_load: a valid file becomes the expected limits, and
// every error path is reported at the line and column of the offending value.
#include <catch2/catch.hpp>

#include <string>

#include "abi/limit_parse.h"
#include "../../bonsaictl/yaml_load.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

struct Loaded {
  Config cfg;
  std::vector<Diag> diags;
};

Loaded load(const std::string& text) {
  Loaded l;
  l.cfg = yaml_load_string(text, "services.yaml", l.diags);
  return l;
}

// The only diagnostic, formatted.
std::string only_error(const std::string& text) {
  Loaded l = load(text);
  REQUIRE(l.diags.size() == 1);
  return diag_format(l.diags[0]);
}

std::string rules_of(const ServiceConfig& s) {
  std::string out;
  for (uint32_t i = 0; i < s.limits.count; ++i) {
    char buf[256];
    rule_format(s.limits.rules[i], buf, sizeof buf);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

}  // namespace

TEST_CASE("yaml: the DESIGN example loads with its limits, scope and compression") {
  Loaded l = load(R"(version: 1
services:
  video:
    scope: service
    limits:
      - calls: [read, pread]
        rate: 10MiB/s
      - calls: [writes]
        fd: socket
        rate: 8MB/s
        burst: 256KiB
      - calls: [openat]
        rate: 200/s
    compression:
      to: ["127.0.0.1:9000", "10.0.0.0/8:*"]
      accept: true
      policy: datarate
      levels: [none, lz4, "zstd:1", "zstd:3", "zstd:9"]
  batch:
)");
  REQUIRE(l.diags.empty());
  REQUIRE(l.cfg.services.size() == 2);
  const ServiceConfig* v = l.cfg.find("video");
  REQUIRE(v);
  CHECK(v->scope == ShmScope::Service);
  CHECK(rules_of(*v) == "read+pread=10MiB/s,writes=8MB/s:burst=256KiB:fd=socket,openat=200/s");
  CHECK(v->rule_marks.size() == 3);
  CHECK(v->rule_marks[1].line + 1 == 8);
  CHECK(v->compression.present);
  CHECK(v->compression.to.size() == 2);
  CHECK(v->compression.accept);
  CHECK(v->compression.levels.size() == 5);
  CHECK(l.cfg.find("batch")->limits.count == 0);
  CHECK(l.cfg.find("batch")->scope == ShmScope::Process);
}

TEST_CASE("yaml: syntax errors carry the parser's position") {
  std::string e = only_error("version: 1\nservices:\n  web: {limits: [\n");
  CHECK(e.rfind("services.yaml:", 0) == 0);
  Loaded l = load("version: 1\nservices:\n  a: b: c\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].line == 3);
}

TEST_CASE("yaml: unknown keys at every level, with did-you-mean") {
  CHECK(only_error("version: 1\nservise: {}\n") ==
        "services.yaml:2:1: unknown key 'servise' in the top level (did you mean 'services'?)");
  CHECK(only_error("version: 1\nservices:\n  web:\n    limts: []\n") ==
        "services.yaml:4:5: unknown key 'limts' in service 'web' (did you mean 'limits'?)");
  CHECK(only_error("version: 1\nservices:\n  web:\n    limits:\n      - calls: [read]\n        rate: 1MB/s\n"
                   "        on: socket\n") ==
        "services.yaml:7:9: unknown key 'on' in a limit (did you mean 'fd'?)");
  CHECK(only_error("version: 1\nservices:\n  web:\n    compression:\n      too: []\n") ==
        "services.yaml:5:7: unknown key 'too' in compression (did you mean 'to'?)");
}

TEST_CASE("yaml: unknown call names point at the element, with did-you-mean") {
  CHECK(only_error("version: 1\nservices:\n  web:\n    limits:\n      - calls: [read, wirte]\n        rate: 1MB/s\n") ==
        "services.yaml:5:23: unknown call 'wirte' (did you mean 'write'?)");
  CHECK(only_error("version: 1\nservices:\n  web:\n    limits:\n      - calls: [frobnicate]\n        rate: 1MB/s\n") ==
        "services.yaml:5:17: unknown call 'frobnicate'");
}

TEST_CASE("yaml: bad units, zero and negative rates, bad bursts") {
  const std::string head = "version: 1\nservices:\n  web:\n    limits:\n      - calls: [read]\n        rate: ";
  std::string e = only_error(head + "10Mib/s\n");
  CHECK(e.rfind("services.yaml:6:15: unknown unit 'Mib'", 0) == 0);
  CHECK(only_error(head + "0MiB/s\n") == "services.yaml:6:15: rate must be > 0 (got '0MiB/s')");
  CHECK(only_error(head + "-5MiB/s\n") == "services.yaml:6:15: rate must be > 0 (got '-5MiB/s')");
  CHECK(only_error(head + "10MiB\n").find("must end in '/s'") != std::string::npos);
  CHECK(only_error(head + "1MB/s\n        burst: lots\n").rfind("services.yaml:7:16: bad burst 'lots'", 0) == 0);
}

TEST_CASE("yaml: a byte rate on a call that moves no data") {
  CHECK(only_error("version: 1\nservices:\n  web:\n    limits:\n      - calls: [openat]\n        rate: 1MB/s\n") ==
        "services.yaml:6:15: 'openat' moves no data: give it a call rate like 200/s (got '1MB/s')");
}

TEST_CASE("yaml: one call in two buckets of one service is refused at the second") {
  std::string e = only_error(
      "version: 1\nservices:\n  web:\n    limits:\n      - calls: [reads]\n        rate: 1MB/s\n"
      "      - calls: [write, read]\n        rate: 2MB/s\n");
  CHECK(e == "services.yaml:7:24: call 'read' is already limited at line 5 of service 'web' (each call may be in one "
             "bucket)");
  // Different fd kinds do not collide; the same call in two services does not either.
  Loaded ok = load("version: 1\nservices:\n  a:\n    limits:\n      - {calls: [send], fd: socket, rate: 1MB/s}\n"
                   "      - {calls: [send], fd: pipe, rate: 2MB/s}\n  b:\n    limits:\n      - {calls: [send], rate: 1MB/s}\n");
  CHECK(ok.diags.empty());
}

TEST_CASE("yaml: bad addresses in compression.to, policies and levels") {
  const std::string head = "version: 1\nservices:\n  web:\n    compression:\n";
  CHECK(only_error(head + "      to: [\"127.0.0.1:9000\", \"300.1.1.1:80\"]\n") ==
        "services.yaml:5:30: bad address '300.1.1.1:80': '300.1.1.1' is not an IPv4 address");
  CHECK(only_error(head + "      to: [\"10.0.0.0/33:*\"]\n").rfind("services.yaml:5:12: bad address '10.0.0.0/33:*': prefix", 0) == 0);
  CHECK(only_error(head + "      to: [\"127.0.0.1\"]\n").find("expected ADDR") != std::string::npos);
  CHECK(only_error(head + "      to: [\"127.0.0.1:0\"]\n").find("port '0'") != std::string::npos);
  CHECK(load(head + "      to: [\"[::1]:9000\", \"fd00::/8:*\"]\n").diags.size() == 1);  // IPv6 needs brackets
  CHECK(load(head + "      to: [\"[::1]:9000\", \"[fd00::]/8:*\"]\n").diags.empty());
  CHECK(only_error(head + "      levels: [none, zstd:30]\n").rfind("services.yaml:5:22: unknown compression level", 0) == 0);
  CHECK(only_error(head + "      policy: fastest\n").rfind("services.yaml:5:15: bad policy 'fastest'", 0) == 0);
  CHECK(load(head + "      levels: [none, lz4]\n      policy: fixed:lz4\n").diags.empty());
}

TEST_CASE("yaml: scope, version, service names, and all errors of a file at once") {
  CHECK(only_error("version: 1\nservices:\n  web:\n    scope: global\n") ==
        "services.yaml:4:12: bad scope 'global' (process or service)");
  CHECK(only_error("version: 2\nservices: {}\n") ==
        "services.yaml:1:10: unsupported version '2' (this bonsaictl reads version 1)");
  CHECK(only_error("services: {}\n").find("missing 'version: 1'") != std::string::npos);
  CHECK(only_error("version: 1\nservices:\n  web/x: {}\n").rfind("services.yaml:3:3: bad service name 'web/x'", 0) == 0);
  Loaded l = load("version: 1\nservices:\n  web:\n    scope: x\n    limits:\n      - calls: [wirte]\n        rate: 0/s\n");
  REQUIRE(l.diags.size() == 3);
  CHECK(l.diags[0].line == 4);
  CHECK(l.diags[1].line == 6);
  CHECK(l.diags[2].line == 7);
}

TEST_CASE("yaml: a missing file is a diagnostic, not an exception") {
  std::vector<Diag> diags;
  yaml_load_file("/nonexistent/services.yaml", diags);
  REQUIRE(diags.size() == 1);
  CHECK(diag_format(diags[0]) == "/nonexistent/services.yaml: cannot read the file");
}
