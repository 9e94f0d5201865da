// SPDX-License-Identifier: MIT
// read/write/pread/pwrite with their LFS (64) and fortify (_chk) names.
// Runs inside the host process: no allocation, no locks, errno preserved.
#include <unistd.h>

#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

namespace {
inline char* at(void* b, size_t off) { return static_cast<char*>(b) + off; }
inline const char* at(const void* b, size_t off) { return static_cast<const char*>(b) + off; }
}  // namespace

extern "C" {
#pragma GCC visibility push(default)

ssize_t read(int fd, void* buf, size_t n) {
  return wrap::transfer(CallId::read, fd, n, true, false, 0,
                        [&](size_t off, size_t len) { return real::read(fd, at(buf, off), len); });
}

ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  return wrap::transfer(CallId::read, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__read_chk(fd, at(buf, off), len, buflen - off);
  });
}

ssize_t write(int fd, const void* buf, size_t n) {
  return wrap::transfer(CallId::write, fd, n, true, true, 0,
                        [&](size_t off, size_t len) { return real::write(fd, at(buf, off), len); });
}

ssize_t pread(int fd, void* buf, size_t n, off_t o) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::pread(fd, at(buf, off), len, o + static_cast<off_t>(off));
  });
}

ssize_t pread64(int fd, void* buf, size_t n, off64_t o) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::pread64(fd, at(buf, off), len, o + static_cast<off64_t>(off));
  });
}

ssize_t __pread_chk(int fd, void* buf, size_t n, off_t o, size_t buflen) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__pread_chk(fd, at(buf, off), len, o + static_cast<off_t>(off), buflen - off);
  });
}

ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t o, size_t buflen) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__pread64_chk(fd, at(buf, off), len, o + static_cast<off64_t>(off), buflen - off);
  });
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t o) {
  return wrap::transfer(CallId::pwrite, fd, n, true, true, 0, [&](size_t off, size_t len) {
    return real::pwrite(fd, at(buf, off), len, o + static_cast<off_t>(off));
  });
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t o) {
  return wrap::transfer(CallId::pwrite, fd, n, true, true, 0, [&](size_t off, size_t len) {
    return real::pwrite64(fd, at(buf, off), len, o + static_cast<off64_t>(off));
  });
}

#pragma GCC visibility pop
}  // extern "C"
