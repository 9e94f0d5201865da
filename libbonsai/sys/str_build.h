// SPDX-License-Identifier: MIT
// Short strings (paths) built without printf. A service member's start builds its
// segment's path and two /proc paths; vfprintf is three pages of libc's code to fault
// in at every exec (sys/startup.h). Truncation is an error, never silent.
#pragma once
#include <cstddef>
#include <cstring>
#include <string_view>

namespace bonsai {

class StrBuild {
 public:
  StrBuild(char* buf, size_t cap) noexcept : buf_(buf), cap_(cap) {
    if (cap_) buf_[0] = '\0';
  }
  StrBuild& put(std::string_view s) noexcept {
    if (!ok_ || s.size() >= cap_ - len_) {
      ok_ = false;
      return *this;
    }
    std::memcpy(buf_ + len_, s.data(), s.size());
    len_ += s.size();
    buf_[len_] = '\0';
    return *this;
  }
  StrBuild& put_uint(unsigned long long v) noexcept {
    char digits[24];
    size_t n = 0;
    do digits[sizeof digits - ++n] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    return put(std::string_view(digits + sizeof digits - n, n));
  }
  // The length written, or 0 if it did not fit (buf then holds a truncated prefix).
  size_t done() const noexcept { return ok_ && cap_ ? len_ : 0; }

 private:
  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool ok_ = true;
};

}  // namespace bonsai
