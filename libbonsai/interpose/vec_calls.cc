// SPDX-License-Identifier: MIT
// Vectored calls: readv/writev, preadv/pwritev (+64), preadv2/pwritev2 (+64v2).
// One real call each, charged what it moved (vectors are not cut up).
#include <sys/uio.h>

#include "interpose/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

#define BONSAI_VEC(id, cancel, expr)                                            \
  (wrap::passthrough(CallId::id) ? (expr)                                      \
                                 : wrap::simple<ssize_t>(CallId::id, fd, cancel, [&] { return expr; }, wrap::moved_ssize))

extern "C" {
#pragma GCC visibility push(default)

ssize_t readv(int fd, const iovec* v, int c) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv(fd, v, c, 0, CallId::readv);
  return BONSAI_VEC(readv, true, real::readv(fd, v, c));
}
ssize_t writev(int fd, const iovec* v, int c) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send(fd, v, c, 0, CallId::writev);
  return BONSAI_VEC(writev, true, real::writev(fd, v, c));
}

ssize_t preadv(int fd, const iovec* v, int c, off_t o) {
  return BONSAI_VEC(preadv, true, real::preadv(fd, v, c, o));
}
ssize_t preadv64(int fd, const iovec* v, int c, off64_t o) {
  return BONSAI_VEC(preadv, true, real::preadv64(fd, v, c, o));
}
ssize_t pwritev(int fd, const iovec* v, int c, off_t o) {
  return BONSAI_VEC(pwritev, true, real::pwritev(fd, v, c, o));
}
ssize_t pwritev64(int fd, const iovec* v, int c, off64_t o) {
  return BONSAI_VEC(pwritev, true, real::pwritev64(fd, v, c, o));
}
ssize_t preadv2(int fd, const iovec* v, int c, off_t o, int f) {
  return BONSAI_VEC(preadv, true, real::preadv2(fd, v, c, o, f));
}
ssize_t preadv64v2(int fd, const iovec* v, int c, off64_t o, int f) {
  return BONSAI_VEC(preadv, true, real::preadv64v2(fd, v, c, o, f));
}
ssize_t pwritev2(int fd, const iovec* v, int c, off_t o, int f) {
  return BONSAI_VEC(pwritev, true, real::pwritev2(fd, v, c, o, f));
}
ssize_t pwritev64v2(int fd, const iovec* v, int c, off64_t o, int f) {
  return BONSAI_VEC(pwritev, true, real::pwritev64v2(fd, v, c, o, f));
}

#pragma GCC visibility pop
}  // extern "C"
