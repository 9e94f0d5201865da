// SPDX-License-Identifier: MIT
// read/write/pread/pwrite with their LFS (64) and fortify (_chk) names.
// Runs inside the host process: no allocation, no locks, errno preserved.
#include <unistd.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

using wrap::at;

extern "C" {
#pragma GCC visibility push(default)

[[gnu::noinline]] static ssize_t read_slow(int fd, void* buf, size_t n) {
  return wrap::transfer(CallId::read, fd, n, true, false, 0,
                        [&](size_t off, size_t len) { return real::read(fd, at(buf, off), len); });
}
ssize_t read(int fd, void* buf, size_t n) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, buf, n, 0, CallId::read);
  BONSAI_FAST_CREDIT(read, read, n, (fd, buf, n));
  return read_slow(fd, buf, n);
}

[[gnu::noinline]] static ssize_t __read_chk_slow(int fd, void* buf, size_t n, size_t buflen) {
  return wrap::transfer(CallId::read, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__read_chk(fd, at(buf, off), len, buflen - off);
  });
}
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, buf, n, 0, CallId::read);
  BONSAI_FAST_CREDIT(read, __read_chk, n, (fd, buf, n, buflen));
  return __read_chk_slow(fd, buf, n, buflen);
}

[[gnu::noinline]] static ssize_t write_slow(int fd, const void* buf, size_t n) {
  return wrap::transfer(CallId::write, fd, n, true, true, 0,
                        [&](size_t off, size_t len) { return real::write(fd, at(buf, off), len); });
}
ssize_t write(int fd, const void* buf, size_t n) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send1(fd, buf, n, 0, CallId::write);
  BONSAI_FAST_CREDIT(write, write, n, (fd, buf, n));
  return write_slow(fd, buf, n);
}

[[gnu::noinline]] static ssize_t pread_slow(int fd, void* buf, size_t n, off_t o) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::pread(fd, at(buf, off), len, at(o, off));
  });
}
ssize_t pread(int fd, void* buf, size_t n, off_t o) {
  BONSAI_FAST_CREDIT(pread, pread, n, (fd, buf, n, o));
  return pread_slow(fd, buf, n, o);
}

[[gnu::noinline]] static ssize_t pread64_slow(int fd, void* buf, size_t n, off64_t o) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::pread64(fd, at(buf, off), len, at(o, off));
  });
}
ssize_t pread64(int fd, void* buf, size_t n, off64_t o) {
  BONSAI_FAST_CREDIT(pread, pread64, n, (fd, buf, n, o));
  return pread64_slow(fd, buf, n, o);
}

[[gnu::noinline]] static ssize_t __pread_chk_slow(int fd, void* buf, size_t n, off_t o, size_t buflen) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__pread_chk(fd, at(buf, off), len, at(o, off), buflen - off);
  });
}
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t o, size_t buflen) {
  BONSAI_FAST_CREDIT(pread, __pread_chk, n, (fd, buf, n, o, buflen));
  return __pread_chk_slow(fd, buf, n, o, buflen);
}

[[gnu::noinline]] static ssize_t __pread64_chk_slow(int fd, void* buf, size_t n, off64_t o, size_t buflen) {
  return wrap::transfer(CallId::pread, fd, n, true, false, 0, [&](size_t off, size_t len) {
    return real::__pread64_chk(fd, at(buf, off), len, at(o, off), buflen - off);
  });
}
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t o, size_t buflen) {
  BONSAI_FAST_CREDIT(pread, __pread64_chk, n, (fd, buf, n, o, buflen));
  return __pread64_chk_slow(fd, buf, n, o, buflen);
}

[[gnu::noinline]] static ssize_t pwrite_slow(int fd, const void* buf, size_t n, off_t o) {
  return wrap::transfer(CallId::pwrite, fd, n, true, true, 0, [&](size_t off, size_t len) {
    return real::pwrite(fd, at(buf, off), len, at(o, off));
  });
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t o) {
  BONSAI_FAST_CREDIT(pwrite, pwrite, n, (fd, buf, n, o));
  return pwrite_slow(fd, buf, n, o);
}

[[gnu::noinline]] static ssize_t pwrite64_slow(int fd, const void* buf, size_t n, off64_t o) {
  return wrap::transfer(CallId::pwrite, fd, n, true, true, 0, [&](size_t off, size_t len) {
    return real::pwrite64(fd, at(buf, off), len, at(o, off));
  });
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t o) {
  BONSAI_FAST_CREDIT(pwrite, pwrite64, n, (fd, buf, n, o));
  return pwrite64_slow(fd, buf, n, o);
}

#pragma GCC visibility pop
}  // extern "C"
