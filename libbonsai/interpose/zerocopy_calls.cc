// SPDX-License-Identifier: MIT
// Zero-copy calls: sendfile(+64), copy_file_range, splice, vmsplice, tee. All count
// as writes, looked up on the destination descriptor. A limited call is clamped to
// one bucket chunk (callers loop on short results), which also tames cp's
// copy_file_range requests of ~2^63 bytes.
#include <fcntl.h>
#include <sys/sendfile.h>

#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

extern "C" {
#pragma GCC visibility push(default)

ssize_t sendfile(int o, int i, off_t* off, size_t n) {
  return wrap::zero_copy(CallId::sendfile, o, n, [&](size_t len) { return real::sendfile(o, i, off, len); });
}

ssize_t sendfile64(int o, int i, off64_t* off, size_t n) {
  return wrap::zero_copy(CallId::sendfile, o, n,
                         [&](size_t len) { return real::sendfile64(o, i, off, len); });
}

ssize_t copy_file_range(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::copy_file_range, o, n,
                         [&](size_t len) { return real::copy_file_range(i, io, o, oo, len, f); });
}

ssize_t splice(int i, off64_t* io, int o, off64_t* oo, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::splice, o, n,
                         [&](size_t len) { return real::splice(i, io, o, oo, len, f); });
}

ssize_t tee(int i, int o, size_t n, unsigned int f) {
  return wrap::zero_copy(CallId::tee, o, n, [&](size_t len) { return real::tee(i, o, len, f); });
}

ssize_t vmsplice(int fd, const iovec* v, size_t c, unsigned int f) {
  return wrap::simple<ssize_t>(CallId::vmsplice, fd, false, [&] { return real::vmsplice(fd, v, c, f); },
                               wrap::moved_ssize);
}

#pragma GCC visibility pop
}  // extern "C"
