// SPDX-License-Identifier: MIT
// syscall(): programs (and libaio's io_submit) that call the data system calls by
// number through glibc's syscall() are limited and shaped like the named calls, and the
// metadata calls by number are charged under their names (syscall(SYS_openat) is an
// openat); which number is which call, and where its arguments are, is
// abi/syscall_table.h's.
// io_submit pays for the bytes its iocbs request before submitting them
// (completion sizes are not seen here).
#include <array>
#include <cerrno>
#include <cstdarg>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "abi/syscall_table.h"
#include "interpose/compressed/compress_hooks.h"
#include "interpose/pace_ready.h"
#include "interpose/real.h"
#include "interpose/strict_calls.h"
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
// what moves through it is unseen. Never silent: once on stderr, and in the
// slot for `stat`. Rings made by inline system calls are found by `stat` in /proc.
[[gnu::noinline]] long uring_setup_seen(long r) {
  if (r >= 0 && limiter_active()) {
    int saved = errno;
    limiter_attach_if_pending();  // the slot that tells `stat`: a service member may not have one yet
    shm_mark_flag(kSlotUring);
    BONSAI_LOG_ONCE(LogLevel::Warn, "this process set up an io_uring: what it moves through the ring is NOT "
                    "limited (BONSAI_IO_URING=deny or bonsaictl run --io-uring=deny makes programs fall back to "
                    "calls that are)");
    errno = saved;
  }
  return r;
}

using Args = std::array<long, 6>;

long make(long nr, const Args& y) { return raw(nr, y[0], y[1], y[2], y[3], y[4], y[5]); }

// A data call by number, limited as the named call its row stands for: the row says
// where its descriptor, buffer or vector, size, offset and flags are among `x`, and
// each piece is the same system call with those replaced.
[[gnu::noinline]] long limited(const SyscallEntry& s, long nr, const Args& x) {
  int fd = static_cast<int>(x[s.fd_arg]);
  int flags = 0;  // for the shape: MSG_* (MSG_DONTWAIT: it must not wait)
  if (s.flags == SysFlags::Msg) {
    flags = static_cast<int>(x[s.flags_arg]);
    if (!s.is_write && (flags & MSG_PEEK)) return make(nr, x);  // a peek is free
  } else if (s.flags == SysFlags::Rwf) {
    flags = (x[s.flags_arg] & RWF_NOWAIT) ? MSG_DONTWAIT : 0;
  }
  // `x` for the piece `off` bytes in: its size `len`, its file offset advanced (-1, the
  // file position, stays: the pieces advance it).
  auto piece = [&](size_t off, long len) {
    Args y = x;
    y[s.size_arg] = len;
    if (s.off_arg >= 0) y[s.off_arg] = at(x[s.off_arg], off);
    return y;
  };
  switch (s.size) {
    case SysSize::Arg:
      if (s.src_fd_arg >= 0) {  // zero-copy: clamped to a chunk and charged on both sides like the named ones
        CallId src = s.src_off_arg >= 0 ? wrap::source_call(reinterpret_cast<const void*>(x[s.src_off_arg]))
                                        : CallId::read;
        bool dontwait = s.flags == SysFlags::Splice && (x[s.flags_arg] & SPLICE_F_NONBLOCK);  // as the named ones
        return wrap::zero_copy(s.call, fd, src, static_cast<int>(x[s.src_fd_arg]), static_cast<size_t>(x[s.size_arg]),
                               [&](size_t len) { return make(nr, piece(0, static_cast<long>(len))); }, dontwait);
      }
      return wrap::transfer(s.call, fd, static_cast<size_t>(x[s.size_arg]), true, s.is_write, flags,
                            [&](size_t off, size_t len) {
                              Args y = piece(off, static_cast<long>(len));
                              y[1] = at(x[1], off);  // the buffer
                              return make(nr, y);
                            });
    case SysSize::Iov: {
      auto* v = reinterpret_cast<const iovec*>(x[s.size_arg - 1]);
      if (s.call == CallId::vmsplice)  // the named wrapper's page-aligned clamp
        return ::vmsplice(fd, v, static_cast<size_t>(x[s.size_arg]), static_cast<unsigned>(x[s.flags_arg]));
      return wrap::transfer_iov(s.call, fd, v, x[s.size_arg], true, s.is_write, flags,
                                [&](const iovec* w, long k, size_t off) {
                                  Args y = piece(off, k);
                                  y[s.size_arg - 1] = reinterpret_cast<long>(w);
                                  return make(nr, y);
                                });
    }
    case SysSize::Msg: {
      auto msg = [&](auto* h) {
        Args y = x;
        y[s.size_arg] = reinterpret_cast<long>(h);
        return make(nr, y);
      };
      if (s.is_write)
        return wrap::transfer_msg(s.call, fd, reinterpret_cast<const msghdr*>(x[s.size_arg]), flags, true, msg);
      return wrap::transfer_msg(s.call, fd, reinterpret_cast<msghdr*>(x[s.size_arg]), flags, false, msg);
    }
    case SysSize::Mmsg:
      return wrap::mmsg(s.call, fd, reinterpret_cast<mmsghdr*>(x[s.size_arg - 1]),
                        static_cast<unsigned int>(x[s.size_arg]), flags, s.is_write,
                        [&](mmsghdr* v, unsigned int k, int fl) {
                          Args y = piece(0, k);
                          y[s.size_arg - 1] = reinterpret_cast<long>(v);
                          y[s.flags_arg] = fl;
                          return static_cast<int>(make(nr, y));
                        });
    case SysSize::None: break;
  }
  return make(nr, x);
}

ssize_t moved_none_long(long r) { return r < 0 ? -1 : 0; }

// A metadata call by number, charged under its row's call name as the named wrapper
// charges it (a call rate). In strict mode the rows without a descriptor to mark (open,
// creat, unlink, rename, mkdir) reach the supervisor unmarked, which charges them: not
// here too.
[[gnu::noinline]] long metadata(const SyscallEntry& s, long nr, const Args& x) {
  if (strict::on() && !s.marked) return make(nr, x);
  int fd = s.fd_arg >= 0 ? static_cast<int>(x[s.fd_arg]) : -1;
  bool cancellable = s.call != CallId::unlink && s.call != CallId::unlinkat && s.call != CallId::rename &&
                     s.call != CallId::mkdir;  // as glibc's functions are cancellation points
  bool may_eagain = s.call == CallId::accept || s.call == CallId::accept4;
  return wrap::simple<long>(s.call, fd, cancellable, [&] { return make(nr, x); }, moved_none_long, may_eagain);
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
  if (nr == SYS_io_submit) return io_submit_limited(a, b, c, d, e, f);
  // The calls of the one table (abi/syscall_table.h: a constant array).
  const SyscallEntry* row = syscall_entry(nr);
  if (!row) return call();
  if (row->size == SysSize::None) {
    if (wrap::unlimited(row->call)) return call();  // as the named wrappers' fast path
    return metadata(*row, nr, Args{a, b, c, d, e, f});
  }
  return limited(*row, nr, Args{a, b, c, d, e, f});
}
