// SPDX-License-Identifier: MIT
// Deciding how a large transfer is cut up (see wrap.h). Runs only for transfers
// larger than a bucket chunk, so its fstat/fcntl cost is amortised. The same shapes
// serve buffers, vectors, messages and (through syscall()) raw system calls.
#include <cerrno>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "interpose/wrap.h"
#include "runtime/fd_class.h"

namespace bonsai::wrap {
namespace {

struct FdInfo {
  mode_t mode = 0;
  bool nonblocking = false;
  bool stream = true;  // for sockets: SOCK_STREAM (or unknown)
};

FdInfo fd_info(int fd) {
  FdFacts f = fd_facts(fd, kAskMode | kAskFlags | kAskSockType);  // runtime/fd_class.h
  return FdInfo{f.mode, f.nonblocking, f.sock_type == 0 || f.sock_type == SOCK_STREAM};
}

}  // namespace

Shape read_shape(int fd, int msg_flags) noexcept {
  if (msg_flags & MSG_OOB) return Shape::Whole;  // urgent data: one call as asked
  FdInfo info = fd_info(fd);
  if (S_ISSOCK(info.mode) && !info.stream) return Shape::Whole;  // a message is never cut
  if (info.nonblocking || (msg_flags & MSG_DONTWAIT)) return Shape::Clamp;
  if (S_ISSOCK(info.mode)) return (msg_flags & MSG_WAITALL) ? Shape::Split : Shape::Clamp;
  if (S_ISFIFO(info.mode)) return Shape::Clamp;
  // Regular files and devices: callers often expect full reads (dd counts short
  // ones as partial records), so read the whole length in chunks.
  return Shape::Split;
}

Shape write_shape(int fd, int msg_flags) noexcept {
  // MSG_OOB marks the last byte of the call urgent: cutting it would mark several.
  if (msg_flags & MSG_OOB) return Shape::Whole;
  FdInfo info = fd_info(fd);
  // Datagrams and SOCK_SEQPACKET records are never cut: Whole pays before the call.
  if (S_ISSOCK(info.mode) && !info.stream) return Shape::Whole;
  // Never a fake EAGAIN on a non-blocking fd: shorten the transfer instead.
  if (info.nonblocking || (msg_flags & MSG_DONTWAIT)) return Shape::Clamp;
  return Shape::Split;
}

bool may_block(int fd, int msg_flags) noexcept {
  if (msg_flags & MSG_DONTWAIT) return false;
  int saved = errno;
  int fl = fcntl(fd, F_GETFL);
  errno = saved;
  return fl >= 0 && !(fl & O_NONBLOCK);
}

}  // namespace bonsai::wrap
