// SPDX-License-Identifier: MIT
// syscall(): programs (and libaio's io_submit) that call the data system calls by
// number through glibc's syscall() are limited and shaped like the named calls.
// io_submit pays for the bytes its iocbs request before submitting them
// (completion sizes are not seen here).
#include <cerrno>
#include <cstdarg>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/pace_ready.h"
#include "interpose/real.h"
#include "interpose/wrap_vec.h"
#include "log/blog.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"

using namespace bonsai;

namespace {

// glibc's convention: -1 and errno on failure.
long raw(long nr, long a, long b, long c, long d, long e, long f) {
  return real::syscall(nr, a, b, c, d, e, f);
}

long io_submit_limited(long a, long b, long c, long d, long e, long f) {
  long nr = b;
  auto** iocbs = reinterpret_cast<struct iocb**>(c);
  if (nr <= 0 || !iocbs) return raw(SYS_io_submit, a, b, c, d, e, f);
  Ticket tickets[64];
  size_t bytes[64];
  long n = nr < 64 ? nr : 64;
  for (long i = 0; i < n; ++i) {
    const struct iocb* cb = iocbs[i];
    CallId id;
    switch (cb ? cb->aio_lio_opcode : -1) {
      case IOCB_CMD_PREAD: id = CallId::pread; break;
      case IOCB_CMD_PWRITE: id = CallId::pwrite; break;
      case IOCB_CMD_PREADV: id = CallId::preadv; break;
      case IOCB_CMD_PWRITEV: id = CallId::pwritev; break;
      default: id = CallId::count_; break;
    }
    bytes[i] = 0;
    if (id == CallId::count_) {
      tickets[i] = Ticket{nullptr, kNoBucket, id, 0};
      continue;
    }
    bytes[i] = cb->aio_nbytes;
    if (cb->aio_lio_opcode == IOCB_CMD_PREADV || cb->aio_lio_opcode == IOCB_CMD_PWRITEV) {
      if (!wrap::iov_sum(reinterpret_cast<const iovec*>(cb->aio_buf), static_cast<long>(cb->aio_nbytes), bytes[i]))
        bytes[i] = 0;
    }
    tickets[i] = ticket_for(id, static_cast<int>(cb->aio_fildes));
    wrap::ticket_prepay(tickets[i], bytes[i], false);  // completions are not seen: pay first
  }
  long r = raw(SYS_io_submit, a, n, c, d, e, f);
  for (long i = 0; i < n; ++i) {
    if (tickets[i].call == CallId::count_) continue;
    bool submitted = i < r;
    if (!submitted) wrap::ticket_refund(tickets[i], bytes[i], 0);
    ticket_count(tickets[i], submitted ? static_cast<ssize_t>(bytes[i]) : -1);
  }
  return r;
}

// A data call by number on a compressed socket is made as the named call, which frames
// (writes) or decodes (reads) it: raw, it put bytes into a framed stream (the peer
// reset it) or handed the program a compressing peer's frames. @return true if made.
// A close by number drops the connection as close() does (its send buffer sent first).
bool framed_syscall(long nr, long a, long b, long c, long d, long e, long f, long& r) {
  int fd = static_cast<int>(a);
  auto* p = reinterpret_cast<void*>(b);
  auto n = static_cast<size_t>(c);
  switch (nr) {
    case SYS_close: compress::on_close(fd), pace::on_close(fd); return false;
    case SYS_write: if (!compress::tx_framed(fd)) return false; r = write(fd, p, n); return true;
    case SYS_read: if (!compress::rx_framed(fd)) return false; r = read(fd, p, n); return true;
    case SYS_writev:
      if (!compress::tx_framed(fd)) return false;
      r = writev(fd, static_cast<const iovec*>(p), static_cast<int>(c));
      return true;
    case SYS_readv:
      if (!compress::rx_framed(fd)) return false;
      r = readv(fd, static_cast<const iovec*>(p), static_cast<int>(c));
      return true;
    case SYS_pwritev2:  // (fd, iov, count, pos_l, pos_h, flags): -1 is the stream's position
      if (d != -1 || !compress::tx_framed(fd)) return false;
      r = pwritev2(fd, static_cast<const iovec*>(p), static_cast<int>(c), -1, static_cast<int>(f));
      return true;
    case SYS_preadv2:
      if (d != -1 || !compress::rx_framed(fd)) return false;
      r = preadv2(fd, static_cast<const iovec*>(p), static_cast<int>(c), -1, static_cast<int>(f));
      return true;
    case SYS_sendto:
      if (!compress::tx_framed(fd)) return false;
      r = sendto(fd, p, n, static_cast<int>(d), reinterpret_cast<const sockaddr*>(e), static_cast<socklen_t>(f));
      return true;
    case SYS_recvfrom:
      if (!compress::rx_framed(fd)) return false;
      r = recvfrom(fd, p, n, static_cast<int>(d), reinterpret_cast<sockaddr*>(e), reinterpret_cast<socklen_t*>(f));
      return true;
    case SYS_sendmsg:
      if (!compress::tx_framed(fd)) return false;
      r = sendmsg(fd, static_cast<const msghdr*>(p), static_cast<int>(c));
      return true;
    case SYS_recvmsg:
      if (!compress::rx_framed(fd)) return false;
      r = recvmsg(fd, static_cast<msghdr*>(p), static_cast<int>(c));
      return true;
    case SYS_sendmmsg:
      if (!compress::tx_framed(fd)) return false;
      r = sendmmsg(fd, static_cast<mmsghdr*>(p), static_cast<unsigned int>(c), static_cast<int>(d));
      return true;
    case SYS_recvmmsg:
      if (!compress::rx_framed(fd)) return false;
      r = recvmmsg(fd, static_cast<mmsghdr*>(p), static_cast<unsigned int>(c), static_cast<int>(d),
                   reinterpret_cast<struct timespec*>(e));
      return true;
    case SYS_sendfile:  // (out, in, offset*, count)
      if (!compress::tx_framed(fd)) return false;
      r = sendfile64(fd, static_cast<int>(b), reinterpret_cast<off64_t*>(c), static_cast<size_t>(d));
      return true;
    case SYS_splice:  // (in, off_in*, out, off_out*, len, flags)
      if (!compress::tx_framed(static_cast<int>(c)) && (b || !compress::rx_framed(fd))) return false;
      r = splice(fd, reinterpret_cast<off64_t*>(b), static_cast<int>(c), reinterpret_cast<off64_t*>(d),
                 static_cast<size_t>(e), static_cast<unsigned int>(f));
      return true;
    default: return false;
  }
}

// Address `off` bytes into the caller's buffer (or file offset) `base`.
using wrap::at;

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

// A ring set up through glibc's syscall() (liburing built on libc, QEMU, older fio):
// what moves through it is unseen. Never silent (issue #40): once on stderr, and in the
// slot for `stat`. Rings made by inline system calls are found by `stat` in /proc.
[[gnu::noinline]] long uring_setup_seen(long r) {
  if (r >= 0 && limiter_active()) {
    int saved = errno;
    shm_mark_flag(kSlotUring);
    BONSAI_LOG_ONCE(LogLevel::Warn, "this process set up an io_uring: what it moves through the ring is NOT "
                    "limited (BONSAI_IO_URING=deny or bonsaictl run --io-uring=deny makes programs fall back to "
                    "calls that are)");
    errno = saved;
  }
  return r;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) long syscall(long nr, ...) {
  va_list ap;
  va_start(ap, nr);
  long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
  auto call = [&] { return raw(nr, a, b, c, d, e, f); };
  // Closing by number keeps the service segment's descriptor, as close() and
  // close_range() do (shm/shm_fd.h): raw closers (CPython, Rust std) reach here.
  if (nr == SYS_close && shm_fd_protected(static_cast<int>(a))) [[unlikely]] return 0;
  if (nr == SYS_close_range) [[unlikely]]
    return close_range(static_cast<unsigned>(a), static_cast<unsigned>(b), static_cast<int>(c));
  if (nr == __NR_io_uring_setup) [[unlikely]] return uring_setup_seen(call());
  if (compress::g_on) [[unlikely]] {
    long r;
    if (framed_syscall(nr, a, b, c, d, e, f, r)) return r;
  }
  if (!limiter_active()) return call();
  int fd = static_cast<int>(a);
  auto bytes = [&](CallId id, bool write, int flags, auto&& piece) {
    return wrap::transfer(id, fd, static_cast<size_t>(c), true, write, flags, piece);
  };
  auto vec = [&](CallId id, bool write, int flags, auto&& piece) {
    return wrap::transfer_iov(id, fd, reinterpret_cast<const iovec*>(b), c, true, write, flags, piece);
  };
  switch (nr) {
    case SYS_read:
    case SYS_write:
      return bytes(nr == SYS_read ? CallId::read : CallId::write, nr == SYS_write, 0,
                   [&](size_t off, size_t len) { return raw(nr, a, at(b, off), static_cast<long>(len), d, e, f); });
    case SYS_pread64:
    case SYS_pwrite64:
      return bytes(nr == SYS_pread64 ? CallId::pread : CallId::pwrite, nr == SYS_pwrite64, 0,
                   [&](size_t off, size_t len) { return raw(nr, a, at(b, off), static_cast<long>(len), at(d, off), e, f); });
    case SYS_readv:
    case SYS_writev:
      return vec(nr == SYS_readv ? CallId::readv : CallId::writev, nr == SYS_writev, 0,
                 [&](const iovec* v, long k, size_t) { return raw(nr, a, reinterpret_cast<long>(v), k, d, e, f); });
    case SYS_preadv:
    case SYS_pwritev:  // (fd, iov, count, pos_l, pos_h): pos_l holds the whole offset on 64-bit
      return vec(nr == SYS_preadv ? CallId::preadv : CallId::pwritev, nr == SYS_pwritev, 0,
                 [&](const iovec* v, long k, size_t off) { return raw(nr, a, reinterpret_cast<long>(v), k, at(d, off), e, f); });
    case SYS_preadv2:
    case SYS_pwritev2:  // offset -1: the file position, which the pieces advance
      return vec(nr == SYS_preadv2 ? CallId::preadv : CallId::pwritev, nr == SYS_pwritev2,
                 (f & RWF_NOWAIT) ? MSG_DONTWAIT : 0, [&](const iovec* v, long k, size_t off) {
                   return raw(nr, a, reinterpret_cast<long>(v), k, at(d, off), e, f);
                 });
    case SYS_sendto:
      return bytes(CallId::sendto, true, static_cast<int>(d),
                   [&](size_t off, size_t len) { return raw(nr, a, at(b, off), static_cast<long>(len), d, e, f); });
    case SYS_recvfrom:
      if (d & MSG_PEEK) return call();  // a peek is free
      return bytes(CallId::recvfrom, false, static_cast<int>(d),
                   [&](size_t off, size_t len) { return raw(nr, a, at(b, off), static_cast<long>(len), d, e, f); });
    case SYS_sendmsg:
      return wrap::transfer_msg(CallId::sendmsg, fd, reinterpret_cast<const msghdr*>(b), static_cast<int>(c), true,
                                [&](const msghdr* h) { return raw(nr, a, reinterpret_cast<long>(h), c, d, e, f); });
    case SYS_recvmsg:
      if (c & MSG_PEEK) return call();
      return wrap::transfer_msg(CallId::recvmsg, fd, reinterpret_cast<msghdr*>(b), static_cast<int>(c), false,
                                [&](msghdr* h) { return raw(nr, a, reinterpret_cast<long>(h), c, d, e, f); });
    case SYS_sendmmsg:
    case SYS_recvmmsg: {  // (fd, msgvec, vlen, flags[, timeout])
      if (nr == SYS_recvmmsg && (d & MSG_PEEK)) return call();
      auto mm = [&](mmsghdr* v, unsigned int k, int fl) {
        return static_cast<int>(raw(nr, a, reinterpret_cast<long>(v), k, fl, e, f));
      };
      return wrap::mmsg(nr == SYS_sendmmsg ? CallId::sendmmsg : CallId::recvmmsg, fd,
                        reinterpret_cast<mmsghdr*>(b), static_cast<unsigned int>(c), static_cast<int>(d),
                        nr == SYS_sendmmsg, mm);
    }
    // Zero-copy calls: clamped to a chunk and charged on both sides like the named ones.
    case SYS_sendfile:  // (out, in, offset*, count)
      return wrap::zero_copy(CallId::sendfile, fd, wrap::source_call(reinterpret_cast<const void*>(c)),
                             static_cast<int>(b), static_cast<size_t>(d),
                             [&](size_t len) { return raw(nr, a, b, c, static_cast<long>(len), e, f); });
    case SYS_splice:  // (in, off_in*, out, off_out*, len, flags)
    case SYS_copy_file_range:
      return wrap::zero_copy(nr == SYS_splice ? CallId::splice : CallId::copy_file_range, static_cast<int>(c),
                             wrap::source_call(reinterpret_cast<const void*>(b)), fd, static_cast<size_t>(e), [&](size_t len) { return raw(nr, a, b, c, d, static_cast<long>(len), f); });
    case SYS_tee:  // (in, out, len, flags)
      return wrap::zero_copy(CallId::tee, static_cast<int>(b), CallId::read, fd, static_cast<size_t>(c),
                             [&](size_t len) { return raw(nr, a, b, static_cast<long>(len), d, e, f); });
    case SYS_vmsplice:  // (fd, iov, count, flags): the named wrapper's page-aligned clamp
      return ::vmsplice(fd, reinterpret_cast<const iovec*>(b), static_cast<size_t>(c), static_cast<unsigned>(d));
    case SYS_io_submit: return io_submit_limited(a, b, c, d, e, f);
    default: return call();
  }
}
