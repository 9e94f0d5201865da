// SPDX-License-Identifier: MIT
// Config fuzzer (issue 8): mutated YAML files and limit strings, for a bounded time.
// Nothing may crash or throw, and every rejection says where: a YAML diagnostic has
// a line and column, a limit error an offset inside the text and a message.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <random>
#include <string>

#include "abi/limit_parse.h"
#include "config/yaml_load.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

const char* const kYamlSeeds[] = {
    "version: 1\nservices:\n  web:\n    scope: service\n    limits:\n      - calls: [read, pread]\n        rate: 10MiB/s\n"
    "        burst: 256KiB\n      - {calls: writes, fd: socket, rate: 8MB/s}\n      - calls: [openat]\n        rate: 200/s\n"
    "    compression:\n      to: [\"127.0.0.1:9000\", \"[::1]:80\"]\n      accept: true\n      policy: datarate\n"
    "      levels: [none, lz4, \"zstd:3\"]\n",
    "version: 1\nservices:\n  a:\n    limits: &L [{calls: read, rate: 1MB/s}]\n  b:\n    limits: *L\n",
    "version: 1\nservices: {x: {}, y: null, z: {scope: process}}\n",
};
const char* const kTokens[] = {"\n", " ", ":", "- ", "[", "]", "{", "}", ",", "&a ", "*a", "? ", "---\n", "...\n",
                               "'", "\"", "#", "!!str ", "rate: ", "calls: ", "limits:", "1MiB/s", "~", "|\n", "%YAML 1.2\n"};
const char* const kLimitSeeds[] = {"read+pread=10MiB/s,writes=8MB/s:burst=256KiB:fd=socket,openat=200/s",
                                   "reads=1.5GB/s:fd=pipe", "write=1MiB/s:fd=socket:fd=file"};
const char* const kLimitTokens[] = {",", "+", "=", ":", "/s", "burst=", "fd=", "MiB", ".", "0", "9", " ", "reads", "x"};

template <size_t N>
std::string mutate(std::mt19937& rng, std::string s, const char* const (&tokens)[N]) {
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int e = 0; e < edits; ++e) {
    size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0: if (at < s.size()) s.erase(at, 1 + rng() % 8); break;
      case 1: s.insert(at, tokens[rng() % N]); break;
      case 2: if (at < s.size()) s[at] = static_cast<char>(rng() % 256); break;
      case 3: if (!s.empty()) { size_t from = rng() % s.size(); s.insert(at, s.substr(from, rng() % 40)); } break;
      default: if (at < s.size()) s[at] = static_cast<char>(32 + rng() % 95); break;
    }
  }
  return s;
}

}  // namespace

TEST_CASE("config fuzz: mutated YAML never crashes and every error has a location", "[fuzz]") {
  std::mt19937 rng(20261123);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  size_t runs = 0, rejected = 0;
  while (std::chrono::steady_clock::now() < until) {
    std::string text = mutate(rng, kYamlSeeds[rng() % std::size(kYamlSeeds)], kTokens);
    std::vector<Diag> diags;
    Config cfg;
    REQUIRE_NOTHROW(cfg = yaml_load_string(text, "f.yaml", diags));
    ++runs;
    if (diags.empty()) continue;
    ++rejected;
    for (size_t i = 0; i < diags.size(); ++i) {
      const Diag& d = diags[i];
      bool summary = i == diags.size() - 1 && d.message.find("not shown") != std::string::npos;
      INFO("input:\n" << text << "\ndiag: " << diag_format(d));
      CHECK(!d.message.empty());
      if (!summary) CHECK(d.line >= 1);
      if (!summary) CHECK(d.column >= 1);
    }
  }
  WARN("yaml fuzz: " << runs << " inputs, " << rejected << " rejected");
  CHECK(runs > 100);
}

TEST_CASE("config fuzz: mutated limit strings never crash and every error points into the text", "[fuzz]") {
  std::mt19937 rng(17);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  size_t runs = 0;
  while (std::chrono::steady_clock::now() < until) {
    std::string text = mutate(rng, kLimitSeeds[rng() % std::size(kLimitSeeds)], kLimitTokens);
    LimitSet set;
    ParseError err;
    ++runs;
    if (limit_parse(text, set, err)) {
      CHECK(set.count >= 1);
      CHECK(set.count <= kMaxRules);
      continue;
    }
    INFO("input: '" << text << "' error: " << err.message);
    CHECK(err.message[0] != '\0');
    CHECK(std::strlen(err.message) < sizeof err.message);
    CHECK(err.offset <= text.size());
    CHECK(err.length >= 1);
  }
  WARN("limit fuzz: " << runs << " inputs");
}
