// SPDX-License-Identifier: MIT
// sys/str_build.h: paths built without printf, and truncation reported, never silent.
#include <catch2/catch.hpp>

#include <climits>
#include <cstring>

#include "shm/shm_name.h"
#include "sys/str_build.h"

using namespace bonsai;

TEST_CASE("StrBuild: strings and numbers, exactly as snprintf would write them", "[str_build]") {
  char buf[64];
  CHECK(StrBuild(buf, sizeof buf).put("/proc/").put_uint(4242).put("/stat").done() == 15);
  CHECK(std::strcmp(buf, "/proc/4242/stat") == 0);
  CHECK(StrBuild(buf, sizeof buf).put_uint(0).done() == 1);
  CHECK(std::strcmp(buf, "0") == 0);
  CHECK(StrBuild(buf, sizeof buf).put_uint(ULLONG_MAX).done() == 20);
  CHECK(std::strcmp(buf, "18446744073709551615") == 0);
  CHECK(StrBuild(buf, sizeof buf).put("").done() == 0);  // empty: nothing written, length 0
  CHECK(buf[0] == '\0');
}

TEST_CASE("StrBuild: what does not fit is an error, and the buffer stays terminated", "[str_build]") {
  char buf[8];
  CHECK(StrBuild(buf, sizeof buf).put("1234567").done() == 7);  // 7 + NUL fits
  CHECK(StrBuild(buf, sizeof buf).put("12345678").done() == 0);
  CHECK(std::strlen(buf) < sizeof buf);
  CHECK(StrBuild(buf, sizeof buf).put("abc").put_uint(123456).done() == 0);
  CHECK(std::strlen(buf) < sizeof buf);
  CHECK(StrBuild(buf, 0).put("x").done() == 0);
}

TEST_CASE("shm_segment_name: built without printf, same names as before", "[str_build]") {
  char buf[256];
  CHECK(shm_segment_name(buf, sizeof buf, "t1.", 1000, "video") == std::strlen("/t1.bonsai.1000.video"));
  CHECK(std::strcmp(buf, "/t1.bonsai.1000.video") == 0);
  CHECK(shm_segment_name(buf, sizeof buf, "", 0, "a") == std::strlen("/bonsai.0.a"));
  CHECK(std::strcmp(buf, "/bonsai.0.a") == 0);
  CHECK(shm_segment_name(buf, 12, "", 4294967295u, "video") == 0);  // too long for 12 bytes
}
