// SPDX-License-Identifier: MIT
// For the supervisor's unit tests (sv_emulate_test.cc, sv_protect_test.cc): a temporary
// file of `bytes` bytes ('a'..'z' over and over: byte i is 'a' + i % 26), open for
// reading and writing at offset 0, removed with the object.
#pragma once
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace sv_test {

struct TempFile {
  std::string path;
  int fd = -1;
  explicit TempFile(size_t bytes) {
    char tmpl[] = "/tmp/sv_test.XXXXXX";
    fd = ::mkstemp(tmpl);
    REQUIRE(fd >= 0);
    path = tmpl;
    std::string data(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>('a' + i % 26);
    REQUIRE(::write(fd, data.data(), bytes) == static_cast<ssize_t>(bytes));
    REQUIRE(::lseek(fd, 0, SEEK_SET) == 0);
  }
  ~TempFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

}  // namespace sv_test
