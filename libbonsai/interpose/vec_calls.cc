// SPDX-License-Identifier: MIT
// Vectored calls: readv/writev, preadv/pwritev (+64), preadv2/pwritev2 (+64v2).
// Shaped exactly as read/write (wrap.h): a vector larger than a chunk is made in
// pieces of at most a chunk (blocking) or shortened to one (non-blocking, pipes,
// sockets), each piece a bounded copy of the caller's entries on the stack.
#include <sys/uio.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap_vec.h"

using namespace bonsai;

using wrap::at;

extern "C" {
#pragma GCC visibility push(default)

[[gnu::noinline]] static ssize_t readv_slow(int fd, const iovec* v, int c) {
  return wrap::transfer_iov(CallId::readv, fd, v, c, true, false, 0,
                            [&](const iovec* p, long k, size_t) { return real::readv(fd, p, static_cast<int>(k)); });
}
ssize_t readv(int fd, const iovec* v, int c) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv(fd, v, c, 0, CallId::readv);
  BONSAI_FAST(readv, readv, (fd, v, c));
  return readv_slow(fd, v, c);
}

[[gnu::noinline]] static ssize_t writev_slow(int fd, const iovec* v, int c) {
  return wrap::transfer_iov(CallId::writev, fd, v, c, true, true, 0,
                            [&](const iovec* p, long k, size_t) { return real::writev(fd, p, static_cast<int>(k)); });
}
ssize_t writev(int fd, const iovec* v, int c) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send(fd, v, c, 0, CallId::writev);
  BONSAI_FAST(writev, writev, (fd, v, c));
  return writev_slow(fd, v, c);
}

[[gnu::noinline]] static ssize_t preadv_slow(int fd, const iovec* v, int c, off_t o) {
  return wrap::transfer_iov(CallId::preadv, fd, v, c, true, false, 0, [&](const iovec* p, long k, size_t off) {
    return real::preadv(fd, p, static_cast<int>(k), at(o, off));
  });
}
ssize_t preadv(int fd, const iovec* v, int c, off_t o) {
  BONSAI_FAST(preadv, preadv, (fd, v, c, o));
  return preadv_slow(fd, v, c, o);
}

[[gnu::noinline]] static ssize_t preadv64_slow(int fd, const iovec* v, int c, off64_t o) {
  return wrap::transfer_iov(CallId::preadv, fd, v, c, true, false, 0, [&](const iovec* p, long k, size_t off) {
    return real::preadv64(fd, p, static_cast<int>(k), at(o, off));
  });
}
ssize_t preadv64(int fd, const iovec* v, int c, off64_t o) {
  BONSAI_FAST(preadv, preadv64, (fd, v, c, o));
  return preadv64_slow(fd, v, c, o);
}

[[gnu::noinline]] static ssize_t pwritev_slow(int fd, const iovec* v, int c, off_t o) {
  return wrap::transfer_iov(CallId::pwritev, fd, v, c, true, true, 0, [&](const iovec* p, long k, size_t off) {
    return real::pwritev(fd, p, static_cast<int>(k), at(o, off));
  });
}
ssize_t pwritev(int fd, const iovec* v, int c, off_t o) {
  BONSAI_FAST(pwritev, pwritev, (fd, v, c, o));
  return pwritev_slow(fd, v, c, o);
}

[[gnu::noinline]] static ssize_t pwritev64_slow(int fd, const iovec* v, int c, off64_t o) {
  return wrap::transfer_iov(CallId::pwritev, fd, v, c, true, true, 0, [&](const iovec* p, long k, size_t off) {
    return real::pwritev64(fd, p, static_cast<int>(k), at(o, off));
  });
}
ssize_t pwritev64(int fd, const iovec* v, int c, off64_t o) {
  BONSAI_FAST(pwritev, pwritev64, (fd, v, c, o));
  return pwritev64_slow(fd, v, c, o);
}

// preadv2/pwritev2: RWF_NOWAIT is the per-call O_NONBLOCK of files (shorten, never split).
// With offset -1 on a compressed socket they are its readv/writev.
[[gnu::noinline]] static ssize_t preadv2_slow(int fd, const iovec* v, int c, off_t o, int f) {
  return wrap::transfer_iov(CallId::preadv, fd, v, c, true, false, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0,
                            [&](const iovec* p, long k, size_t off) {
                              return real::preadv2(fd, p, static_cast<int>(k), at(o, off), f);
                            });
}
ssize_t preadv2(int fd, const iovec* v, int c, off_t o, int f) {
  if (o == -1 && compress::rx_framed(fd)) [[unlikely]]  // -1: the stream's position (a socket)
    return compress::rx_recv(fd, v, c, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0, CallId::preadv);
  BONSAI_FAST(preadv, preadv2, (fd, v, c, o, f));
  return preadv2_slow(fd, v, c, o, f);
}

[[gnu::noinline]] static ssize_t preadv64v2_slow(int fd, const iovec* v, int c, off64_t o, int f) {
  return wrap::transfer_iov(CallId::preadv, fd, v, c, true, false, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0,
                            [&](const iovec* p, long k, size_t off) {
                              return real::preadv64v2(fd, p, static_cast<int>(k), at(o, off), f);
                            });
}
ssize_t preadv64v2(int fd, const iovec* v, int c, off64_t o, int f) {
  if (o == -1 && compress::rx_framed(fd)) [[unlikely]]  // -1: the stream's position (a socket)
    return compress::rx_recv(fd, v, c, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0, CallId::preadv);
  BONSAI_FAST(preadv, preadv64v2, (fd, v, c, o, f));
  return preadv64v2_slow(fd, v, c, o, f);
}

[[gnu::noinline]] static ssize_t pwritev2_slow(int fd, const iovec* v, int c, off_t o, int f) {
  return wrap::transfer_iov(CallId::pwritev, fd, v, c, true, true, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0,
                            [&](const iovec* p, long k, size_t off) {
                              return real::pwritev2(fd, p, static_cast<int>(k), at(o, off), f);
                            });
}
ssize_t pwritev2(int fd, const iovec* v, int c, off_t o, int f) {
  if (o == -1 && compress::tx_framed(fd)) [[unlikely]]
    return compress::tx_send(fd, v, c, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0, CallId::pwritev);
  BONSAI_FAST(pwritev, pwritev2, (fd, v, c, o, f));
  return pwritev2_slow(fd, v, c, o, f);
}

[[gnu::noinline]] static ssize_t pwritev64v2_slow(int fd, const iovec* v, int c, off64_t o, int f) {
  return wrap::transfer_iov(CallId::pwritev, fd, v, c, true, true, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0,
                            [&](const iovec* p, long k, size_t off) {
                              return real::pwritev64v2(fd, p, static_cast<int>(k), at(o, off), f);
                            });
}
ssize_t pwritev64v2(int fd, const iovec* v, int c, off64_t o, int f) {
  if (o == -1 && compress::tx_framed(fd)) [[unlikely]]
    return compress::tx_send(fd, v, c, (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0, CallId::pwritev);
  BONSAI_FAST(pwritev, pwritev64v2, (fd, v, c, o, f));
  return pwritev64v2_slow(fd, v, c, o, f);
}

#pragma GCC visibility pop
}  // extern "C"
