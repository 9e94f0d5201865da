// SPDX-License-Identifier: MIT
// stdio on sockets while compression is on. glibc's stdio reaches the kernel through
// internal calls we cannot see, so a FILE that fdopen() made on a socket went around
// the framed paths: its writes put raw bytes into a framed stream the program's own
// write() had started (the peer reset the connection), and its reads handed the
// program a compressing peer's frames as data (fread/fgets returned the wire bytes).
// So fdopen() on an internet stream socket (the only kind that is ever framed) returns
// a FILE whose reads and writes are ours (glibc's fopencookie) and whose fileno() is
// the descriptor, as fdopen's would be. Its bytes are charged here, under fread and
// fwrite: wire bytes on a framed socket, the bytes themselves on a plain one; the
// stdio wrappers hand such a FILE over uncharged (compress_hooks.h: stdio_own_file).
// Not covered: stdin/stdout/stderr on a framed socket (their FILEs exist before any
// connection), wide-character I/O on these FILEs (fopencookie's are byte streams).
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap.h"
#include "runtime/fd_class.h"

using namespace bonsai;

namespace {

int fd_of_cookie(void* cookie) { return static_cast<int>(reinterpret_cast<intptr_t>(cookie)); }

ssize_t cookie_read(void* cookie, char* buf, size_t n) {
  int fd = fd_of_cookie(cookie);
  if (compress::rx_framed(fd)) return compress::rx_recv1(fd, buf, n, 0, CallId::fread);
  return wrap::transfer(CallId::fread, fd, n, true, false, 0,
                        [&](size_t off, size_t len) { return real::read(fd, wrap::at(buf, off), len); });
}

// glibc takes a short count from a cookie as an error (a plain FILE's write goes on
// until all is written): go on here, and stop at the first error, as glibc does.
ssize_t cookie_write(void* cookie, const char* buf, size_t n) {
  int fd = fd_of_cookie(cookie);
  size_t done = 0;
  while (done < n) {
    ssize_t r = compress::tx_framed(fd)
                    ? compress::tx_send1(fd, buf + done, n - done, 0, CallId::fwrite)
                    : wrap::transfer(CallId::fwrite, fd, n - done, true, true, 0, [&](size_t off, size_t len) {
                        return real::write(fd, wrap::at(buf + done, off), len);
                      });
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  return done ? static_cast<ssize_t>(done) : -1;
}

// fclose: the descriptor goes through our close (a non-blocking sender's buffered
// frames are sent first, the connection is forgotten).
int cookie_close(void* cookie) {
  int fd = fd_of_cookie(cookie);
  if (compress::FdSlot* s = compress::fd_slot(fd)) s->file.store(nullptr, std::memory_order_relaxed);
  return close(fd);
}

constexpr cookie_io_functions_t kSocketFile{cookie_read, cookie_write, nullptr, cookie_close};

// fileno() of a cookie FILE says "no descriptor"; ours has one, as fdopen's would.
void set_fileno(FILE* f, int fd) {
#if defined(__GLIBC__)
  f->_fileno = fd;  // glibc marks a cookie's -2
#else
  // musl's FILE is private: its descriptor follows 15 pointer-sized fields
  // (src/internal/stdio_impl.h, the same since musl 1.0), and a cookie's is -1. Written
  // only where it reads -1, and kept only if fileno() then answers `fd`.
  int* slot = reinterpret_cast<int*>(reinterpret_cast<char*>(f) + 15 * sizeof(void*));
  if (*slot != -1) return;
  *slot = fd;
  if (fileno(f) != fd) *slot = -1;
#endif
}

FILE* socket_fdopen(int fd, const char* mode) {
  if (fcntl(fd, F_GETFL) < 0) return nullptr;  // EBADF, as fdopen
  compress::FdSlot* slot = compress::fd_slot_make(fd);
  if (!slot) return real::fdopen(fd, mode);  // no memory for the slot: as before
  FILE* f = fopencookie(reinterpret_cast<void*>(static_cast<intptr_t>(fd)), mode, kSocketFile);
  if (!f) return nullptr;  // EINVAL (mode), ENOMEM
  set_fileno(f, fd);
  slot->file.store(f, std::memory_order_relaxed);
  return f;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

FILE* fdopen(int fd, const char* mode) {
  if (compress::g_on && fd_is_inet_stream(fd, nullptr)) [[unlikely]] {
    int saved = errno;
    FILE* f = socket_fdopen(fd, mode);
    if (f) errno = saved;
    return f;
  }
  return real::fdopen(fd, mode);
}

#pragma GCC visibility pop
}  // extern "C"
