// SPDX-License-Identifier: MIT
// Metadata calls, limited by call rate only: open/openat/creat (+64, fortify
// __open_2...: charged under the system call the libc makes, below), close, connect,
// accept/accept4, fsync/fdatasync, unlink/unlinkat, rename, mkdir. connect/accept also
// tell compression about each connection.
#include <cstdarg>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/pace_ready.h"
#include "interpose/real.h"
#include "interpose/wrap.h"
#include "shm/shm_fd.h"

using namespace bonsai;

namespace {
// open's mode is only passed (and only read) when the flags ask for it.
inline mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}
}  // namespace

// A call name means the system call of that name however the program reaches it
// (docs/reference/limits.md "What each call name covers"): the supervisor sees only system
// calls, strace shows them. So each function is charged under the system call its libc
// makes for it: glibc (2.26 on) makes open(), open64() and __open_2() as openat(2) and
// creat() as creat(2); musl makes open() and creat() as open(2).
#ifdef __GLIBC__
#define BONSAI_OPEN_SYS openat
#define BONSAI_CREAT_SYS creat
#else
#define BONSAI_OPEN_SYS open
#define BONSAI_CREAT_SYS open
#endif

// The slow paths (wrap.h BONSAI_SIMPLE_SLOW): (call id, glibc name, descriptor or -1,
// cancellable, parameters, arguments).
BONSAI_SIMPLE_SLOW(BONSAI_OPEN_SYS, open, -1, true, (const char* p, int f, mode_t m), (p, f, m))
BONSAI_SIMPLE_SLOW(BONSAI_OPEN_SYS, open64, -1, true, (const char* p, int f, mode_t m), (p, f, m))
BONSAI_SIMPLE_SLOW(BONSAI_OPEN_SYS, __open_2, -1, true, (const char* p, int f), (p, f))
BONSAI_SIMPLE_SLOW(BONSAI_OPEN_SYS, __open64_2, -1, true, (const char* p, int f), (p, f))
BONSAI_SIMPLE_SLOW(openat, openat, -1, true, (int d, const char* p, int f, mode_t m), (d, p, f, m))
BONSAI_SIMPLE_SLOW(openat, openat64, -1, true, (int d, const char* p, int f, mode_t m), (d, p, f, m))
BONSAI_SIMPLE_SLOW(openat, __openat_2, -1, true, (int d, const char* p, int f), (d, p, f))
BONSAI_SIMPLE_SLOW(openat, __openat64_2, -1, true, (int d, const char* p, int f), (d, p, f))
BONSAI_SIMPLE_SLOW(BONSAI_CREAT_SYS, creat, -1, true, (const char* p, mode_t m), (p, m))
BONSAI_SIMPLE_SLOW(BONSAI_CREAT_SYS, creat64, -1, true, (const char* p, mode_t m), (p, m))
BONSAI_SIMPLE_SLOW(close, close, fd, true, (int fd), (fd))
BONSAI_SIMPLE_SLOW(connect, connect, fd, true, (int fd, const sockaddr* a, socklen_t l), (fd, a, l))
BONSAI_SIMPLE_SLOW_NB(accept, accept, fd, true, (int fd, sockaddr* a, socklen_t* l), (fd, a, l))
BONSAI_SIMPLE_SLOW_NB(accept4, accept4, fd, true, (int fd, sockaddr* a, socklen_t* l, int f), (fd, a, l, f))
BONSAI_SIMPLE_SLOW(fsync, fsync, fd, true, (int fd), (fd))
BONSAI_SIMPLE_SLOW(fdatasync, fdatasync, fd, true, (int fd), (fd))
BONSAI_SIMPLE_SLOW(unlink, unlink, -1, false, (const char* p), (p))
BONSAI_SIMPLE_SLOW(unlinkat, unlinkat, -1, false, (int d, const char* p, int f), (d, p, f))
BONSAI_SIMPLE_SLOW(rename, rename, -1, false, (const char* a, const char* b), (a, b))
BONSAI_SIMPLE_SLOW(mkdir, mkdir, -1, false, (const char* p, mode_t m), (p, m))

// connect/accept/accept4 are limited here only; while compression is on, the
// wrappers below tell it about each connection after the real call (compress_hooks.h:
// on_connected, on_accepted), which decides whether the socket is framed.
namespace {
[[gnu::always_inline]] inline int connect_limited(int fd, const sockaddr* a, socklen_t l) {
  BONSAI_FAST(connect, connect, (fd, a, l));
  return connect_slow(fd, a, l);
}
[[gnu::always_inline]] inline int accept_limited(int fd, sockaddr* a, socklen_t* l) {
  BONSAI_FAST(accept, accept, (fd, a, l));
  return accept_slow(fd, a, l);
}
[[gnu::always_inline]] inline int accept4_limited(int fd, sockaddr* a, socklen_t* l, int f) {
  BONSAI_FAST(accept4, accept4, (fd, a, l, f));
  return accept4_slow(fd, a, l, f);
}

[[gnu::noinline]] int connect_observed(int fd, const sockaddr* a, socklen_t l) {
  int r = connect_limited(fd, a, l);
  compress::on_connected(fd, a, l, r);
  return r;
}

// The real call writes the peer into our own storage (compression needs it even when
// the caller asks for none), then into the caller's as accept would have.
[[gnu::noinline]] int accept_observed(int fd, sockaddr* a, socklen_t* l, int f, bool four) {
  sockaddr_storage peer;
  socklen_t plen = sizeof peer;
  auto* p = reinterpret_cast<sockaddr*>(&peer);
  int r = four ? accept4_limited(fd, p, &plen, f) : accept_limited(fd, p, &plen);
  if (r < 0) return r;
  if (a && l) {
    std::memcpy(a, &peer, *l < plen ? *l : plen);
    *l = plen;
  }
  compress::on_accepted(r, p, plen);
  return r;
}
}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int open(const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  BONSAI_FAST(BONSAI_OPEN_SYS, open, (p, f, m));
  return open_slow(p, f, m);
}
int open64(const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  BONSAI_FAST(BONSAI_OPEN_SYS, open64, (p, f, m));
  return open64_slow(p, f, m);
}
int __open_2(const char* p, int f) {
  BONSAI_FAST(BONSAI_OPEN_SYS, __open_2, (p, f));
  return __open_2_slow(p, f);
}
int __open64_2(const char* p, int f) {
  BONSAI_FAST(BONSAI_OPEN_SYS, __open64_2, (p, f));
  return __open64_2_slow(p, f);
}

int openat(int d, const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  BONSAI_FAST(openat, openat, (d, p, f, m));
  return openat_slow(d, p, f, m);
}
int openat64(int d, const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  BONSAI_FAST(openat, openat64, (d, p, f, m));
  return openat64_slow(d, p, f, m);
}
int __openat_2(int d, const char* p, int f) {
  BONSAI_FAST(openat, __openat_2, (d, p, f));
  return __openat_2_slow(d, p, f);
}
int __openat64_2(int d, const char* p, int f) {
  BONSAI_FAST(openat, __openat64_2, (d, p, f));
  return __openat64_2_slow(d, p, f);
}

int creat(const char* p, mode_t m) {
  BONSAI_FAST(BONSAI_CREAT_SYS, creat, (p, m));
  return creat_slow(p, m);
}
int creat64(const char* p, mode_t m) {
  BONSAI_FAST(BONSAI_CREAT_SYS, creat64, (p, m));
  return creat64_slow(p, m);
}
int close(int fd) {
  if (shm_fd_protected(fd)) [[unlikely]] return 0;  // the service segment stays open (shm/shm_fd.h)
  if (compress::g_on) [[unlikely]] compress::on_close(fd);
  pace::on_close(fd);
  BONSAI_FAST(close, close, (fd));
  return close_slow(fd);
}
// Not limited; interposed so that a compressed socket's send buffer goes out before
// the end of stream (a half-close after non-blocking writes).
int shutdown(int fd, int how) {
  if (compress::g_tx_on && how != SHUT_RD) [[unlikely]] compress::tx_drain(fd);
  return real::shutdown(fd, how);
}
int connect(int fd, const sockaddr* a, socklen_t l) {
  if (compress::g_on) [[unlikely]] return connect_observed(fd, a, l);
  return connect_limited(fd, a, l);
}
int accept(int fd, sockaddr* a, socklen_t* l) {
  if (compress::g_on) [[unlikely]] return accept_observed(fd, a, l, 0, false);
  return accept_limited(fd, a, l);
}
int accept4(int fd, sockaddr* a, socklen_t* l, int f) {
  if (compress::g_on) [[unlikely]] return accept_observed(fd, a, l, f, true);
  return accept4_limited(fd, a, l, f);
}
int fsync(int fd) {
  BONSAI_FAST(fsync, fsync, (fd));
  return fsync_slow(fd);
}
int fdatasync(int fd) {
  BONSAI_FAST(fdatasync, fdatasync, (fd));
  return fdatasync_slow(fd);
}
int unlink(const char* p) {
  BONSAI_FAST(unlink, unlink, (p));
  return unlink_slow(p);
}
int unlinkat(int d, const char* p, int f) {
  BONSAI_FAST(unlinkat, unlinkat, (d, p, f));
  return unlinkat_slow(d, p, f);
}
int rename(const char* a, const char* b) {
  BONSAI_FAST(rename, rename, (a, b));
  return rename_slow(a, b);
}
int mkdir(const char* p, mode_t m) {
  BONSAI_FAST(mkdir, mkdir, (p, m));
  return mkdir_slow(p, m);
}

#pragma GCC visibility pop
}  // extern "C"
