// SPDX-License-Identifier: MIT
// runtime/options: an environment entry told apart by the names kept in start-up data
// (option_entry, what option_env's one pass over the environment uses).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "runtime/options.h"

using namespace bonsai;

namespace {
// The option `entry` sets and its value, or "-" when it sets none.
std::string which(const char* entry) {
  Opt o{};
  const char* value = nullptr;
  if (!option_entry(entry, o, value)) return "-";
  return std::string(option_row(o).name) + "|" + value;
}
}  // namespace

TEST_CASE("option_entry: every row's name, and only the whole name", "[options]") {
  for (const OptionRow& row : kOptions) {
    std::string e = std::string(row.name) + "=v1";
    CHECK(which(e.c_str()) == std::string(row.name) + "|v1");
    std::string longer = std::string(row.name) + "X=v";
    CHECK(which(longer.c_str()) == "-");
    std::string shorter(row.name, std::strlen(row.name) - 1);
    CHECK(which((shorter + "=v").c_str()) == "-");
  }
  CHECK(which("BONSAI_LIMITS=") == "BONSAI_LIMITS|");  // set, empty
  CHECK(which("BONSAI_LIMITS") == "-");               // no '='
  CHECK(which("BONSAI_=x") == "-");
  CHECK(which("BONSAI_BUILD=build") == "-");          // ours by prefix, not an option
  CHECK(which("bonsai_limits=x") == "-");
  CHECK(which("LD_PRELOAD=/x.so") == "-");
  CHECK(which("") == "-");
  CHECK(which("BONSAI_SHM_UID=0") == "BONSAI_SHM_UID|0");  // a prefix of no other name
  CHECK(which("BONSAI_COMPRESS_STATS=/tmp/%p") == "BONSAI_COMPRESS_STATS|/tmp/%p");
}
