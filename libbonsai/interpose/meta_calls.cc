// SPDX-License-Identifier: MIT
// Metadata calls, limited by call rate only: open/openat/creat (+64, fortify
// __open_2...), close, connect, accept/accept4, fsync/fdatasync, unlink/unlinkat,
// rename, mkdir.
#include <cstdarg>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interpose/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap.h"
#include "shm/shm_fd.h"

using namespace bonsai;

#define BONSAI_META(id, fd, cancel, expr)                                       \
  (wrap::passthrough(CallId::id) ? (expr)                                      \
                                 : wrap::simple<int>(CallId::id, fd, cancel, [&] { return expr; }, wrap::moved_none))

namespace {
// open's mode is only passed (and only read) when the flags ask for it.
inline mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}
}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int open(const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  return BONSAI_META(open, -1, true, real::open(p, f, m));
}
int open64(const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  return BONSAI_META(open, -1, true, real::open64(p, f, m));
}
int __open_2(const char* p, int f) { return BONSAI_META(open, -1, true, real::__open_2(p, f)); }
int __open64_2(const char* p, int f) { return BONSAI_META(open, -1, true, real::__open64_2(p, f)); }

int openat(int d, const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  return BONSAI_META(openat, -1, true, real::openat(d, p, f, m));
}
int openat64(int d, const char* p, int f, ...) {
  va_list ap;
  va_start(ap, f);
  mode_t m = mode_arg(f, ap);
  va_end(ap);
  return BONSAI_META(openat, -1, true, real::openat64(d, p, f, m));
}
int __openat_2(int d, const char* p, int f) { return BONSAI_META(openat, -1, true, real::__openat_2(d, p, f)); }
int __openat64_2(int d, const char* p, int f) {
  return BONSAI_META(openat, -1, true, real::__openat64_2(d, p, f));
}

int creat(const char* p, mode_t m) { return BONSAI_META(creat, -1, true, real::creat(p, m)); }
int creat64(const char* p, mode_t m) { return BONSAI_META(creat, -1, true, real::creat64(p, m)); }
int close(int fd) {
  if (shm_fd_protected(fd)) [[unlikely]] return 0;  // the service segment stays open (shm/shm_fd.h)
  if (compress::g_on) [[unlikely]] compress::on_close(fd);
  return BONSAI_META(close, fd, true, real::close(fd));
}
int connect(int fd, const sockaddr* a, socklen_t l) {
  if (compress::g_on) [[unlikely]] return compress::connect_hooked(fd, a, l);
  return BONSAI_META(connect, fd, true, real::connect(fd, a, l));
}
int accept(int fd, sockaddr* a, socklen_t* l) {
  if (compress::g_on) [[unlikely]] return compress::accept_hooked(fd, a, l, 0, false);
  return BONSAI_META(accept, fd, true, real::accept(fd, a, l));
}
int accept4(int fd, sockaddr* a, socklen_t* l, int f) {
  if (compress::g_on) [[unlikely]] return compress::accept_hooked(fd, a, l, f, true);
  return BONSAI_META(accept4, fd, true, real::accept4(fd, a, l, f));
}
int fsync(int fd) { return BONSAI_META(fsync, fd, true, real::fsync(fd)); }
int fdatasync(int fd) { return BONSAI_META(fdatasync, fd, true, real::fdatasync(fd)); }
int unlink(const char* p) { return BONSAI_META(unlink, -1, false, real::unlink(p)); }
int unlinkat(int d, const char* p, int f) { return BONSAI_META(unlinkat, -1, false, real::unlinkat(d, p, f)); }
int rename(const char* a, const char* b) { return BONSAI_META(rename, -1, false, real::rename(a, b)); }
int mkdir(const char* p, mode_t m) { return BONSAI_META(mkdir, -1, false, real::mkdir(p, m)); }

#pragma GCC visibility pop
}  // extern "C"
