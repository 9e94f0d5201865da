// SPDX-License-Identifier: MIT
// abi/strict_mark.h: the marks bonsaictl draws and the library accepts, and where a
// mark goes in a call's first argument.
#include <catch2/catch.hpp>

#include "abi/strict_mark.h"

using namespace bonsai;

TEST_CASE("strict mark: no ordinary register's upper half is a valid mark", "[strict]") {
  CHECK_FALSE(strict_mark_valid(0));            // a zero-extended int or descriptor
  CHECK_FALSE(strict_mark_valid(0xffffffffu));  // a sign-extended negative int (AT_FDCWD)
  CHECK_FALSE(strict_mark_valid(0x00007fffu));  // a user-space pointer's upper half
  CHECK_FALSE(strict_mark_valid(0x7fffffffu));
  CHECK(strict_mark_valid(0x80000000u));
  CHECK(strict_mark_valid(0xfffffffeu));
  CHECK(strict_mark_valid(0xdeadbeefu));
}

TEST_CASE("strict mark: the first argument keeps its lower half, which is all the kernel reads", "[strict]") {
  CHECK(strict_marked_arg(0x8badf00du, 3) == 0x8badf00d00000003ull);
  // AT_FDCWD (-100 as an int, sign-extended by a caller): the lower half survives
  uint64_t cwd = static_cast<uint64_t>(static_cast<int64_t>(-100));
  uint64_t m = strict_marked_arg(0x8badf00du, cwd);
  CHECK(static_cast<int>(static_cast<uint32_t>(m)) == -100);
  CHECK((m >> 32) == 0x8badf00du);
}

TEST_CASE("strict mark: BONSAI_STRICT's mark is exactly eight hex digits of a valid mark", "[strict]") {
  uint32_t m = 0;
  CHECK(strict_mark_parse("8badf00d", m));
  CHECK(m == 0x8badf00du);
  CHECK(strict_mark_parse("FFFFFFFE", m));
  CHECK(m == 0xfffffffeu);
  uint32_t keep = 7;
  for (const char* bad : {"", "8badf00", "8badf00d0", "0badf00d", "ffffffff", "00000000", "8badf0 d", "8badf00g",
                          "-8badf00"}) {
    CAPTURE(bad);
    CHECK_FALSE(strict_mark_parse(bad, keep));
  }
  CHECK_FALSE(strict_mark_parse(nullptr, keep));
  CHECK(keep == 7);  // untouched on failure
}
