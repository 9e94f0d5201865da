// SPDX-License-Identifier: MIT
// Duplicated descriptors: dup, dup2, dup3 and fcntl's F_DUPFD/F_DUPFD_CLOEXEC (fcntl64
// too). Not limited. When compression is on, a duplicate of a compressed connection
// reaches the same streams (compress_hooks.h: on_dup): written through both numbers,
// the connection used to get raw bytes from one of them inside the other's frames and
// the peer reset it. dup2/dup3 close the number they replace as close() does first (a
// compressed connection there sends what it buffered and is forgotten). Every other
// fcntl command goes straight to glibc.
#include <cerrno>
#include <cstdarg>
#include <fcntl.h>
#include <unistd.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/pace_ready.h"
#include "interpose/real.h"

using namespace bonsai;

namespace {

int dup_to(int fd, int to, int flags, bool three) {
  if (compress::g_on && fd != to && fd >= 0) [[unlikely]] {
    if (fcntl(fd, F_GETFD) < 0) return -1;  // EBADF: nothing of `to` is touched
    compress::on_close(to);
  }
  if (fd != to && fd >= 0) pace::on_close(to);
  int r = three ? real::dup3(fd, to, flags) : real::dup2(fd, to);
  if (r >= 0 && compress::g_on) [[unlikely]] compress::on_dup(fd, r);
  return r;
}

int fcntl_call(bool is64, int fd, int cmd, long arg) {
  int r = is64 ? real::fcntl64(fd, cmd, arg) : real::fcntl(fd, cmd, arg);
  if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && r >= 0 && compress::g_on) [[unlikely]] compress::on_dup(fd, r);
  return r;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int dup(int fd) {
  int r = real::dup(fd);
  if (r >= 0 && compress::g_on) [[unlikely]] compress::on_dup(fd, r);
  return r;
}
int dup2(int fd, int to) { return dup_to(fd, to, 0, false); }
int dup3(int fd, int to, int flags) { return dup_to(fd, to, flags, true); }

// The third argument, when there is one, is an int or a pointer: read as glibc reads
// it (one word).
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  return fcntl_call(false, fd, cmd, arg);
}
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  long arg = va_arg(ap, long);
  va_end(ap);
  return fcntl_call(true, fd, cmd, arg);
}

#pragma GCC visibility pop
}  // extern "C"
