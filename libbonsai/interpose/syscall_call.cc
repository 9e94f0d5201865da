// SPDX-License-Identifier: MIT
// syscall(): programs (and libaio's io_submit) that call the data system calls by
// number through glibc's syscall() are limited like the named calls. io_submit is
// charged the bytes its iocbs request (completion sizes are not seen here).
#include <cerrno>
#include <cstdarg>
#include <linux/aio_abi.h>
#include <sys/syscall.h>

#include "interpose/real.h"
#include "interpose/wrap.h"

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
    tickets[i] = id == CallId::count_ ? Ticket{nullptr, kNoBucket, id, 0}
                                      : ticket_for(id, static_cast<int>(cb->aio_fildes));
    ticket_wait(tickets[i], false);
  }
  long r = raw(SYS_io_submit, a, n, c, d, e, f);
  for (long i = 0; i < r && i < n; ++i) {
    if (tickets[i].call == CallId::count_) continue;
    const struct iocb* cb = iocbs[i];
    size_t bytes = cb->aio_nbytes;
    if (cb->aio_lio_opcode == IOCB_CMD_PREADV || cb->aio_lio_opcode == IOCB_CMD_PWRITEV)
      bytes = wrap::iov_total(reinterpret_cast<const iovec*>(cb->aio_buf), static_cast<long>(cb->aio_nbytes));
    ticket_done(tickets[i], static_cast<ssize_t>(bytes));
  }
  return r;
}

template <typename Call>
long counted(CallId id, int fd, bool write, Call&& call) {
  Ticket t = ticket_for(id, fd);
  (void)write;
  ticket_wait(t, true);
  long r = call();
  ticket_done(t, r);
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
  if (!limiter_active()) return call();
  int fd = static_cast<int>(a);
  switch (nr) {
    case SYS_read: return counted(CallId::read, fd, false, call);
    case SYS_write: return counted(CallId::write, fd, true, call);
    case SYS_pread64: return counted(CallId::pread, fd, false, call);
    case SYS_pwrite64: return counted(CallId::pwrite, fd, true, call);
    case SYS_readv: return counted(CallId::readv, fd, false, call);
    case SYS_writev: return counted(CallId::writev, fd, true, call);
    case SYS_preadv: case SYS_preadv2: return counted(CallId::preadv, fd, false, call);
    case SYS_pwritev: case SYS_pwritev2: return counted(CallId::pwritev, fd, true, call);
    case SYS_sendto: return counted(CallId::sendto, fd, true, call);
    case SYS_recvfrom: return counted(CallId::recvfrom, fd, false, call);
    case SYS_sendmsg: return counted(CallId::sendmsg, fd, true, call);
    case SYS_recvmsg: return counted(CallId::recvmsg, fd, false, call);
    case SYS_sendfile: return counted(CallId::sendfile, fd, true, call);
    case SYS_splice: return counted(CallId::splice, static_cast<int>(c), true, call);
    case SYS_tee: return counted(CallId::tee, static_cast<int>(b), true, call);
    case SYS_copy_file_range: return counted(CallId::copy_file_range, static_cast<int>(c), true, call);
    case SYS_io_submit: return io_submit_limited(a, b, c, d, e, f);
    default: return call();
  }
}
