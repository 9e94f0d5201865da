// SPDX-License-Identifier: MIT
// The descriptor classifier (see fd_class.h).
#include "runtime/fd_class.h"

#include <cerrno>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "sys/raw_stat.h"

namespace bonsai {

FdFacts fd_facts(int fd, unsigned ask) noexcept {
  int saved = errno;
  FdFacts f;
  if (ask & kAskMode) {
    struct stat st;
    if (raw_fstat(fd, st) == 0) f.mode = st.st_mode;
  }
  if (ask & kAskFlags) {
    int fl = fcntl(fd, F_GETFL);
    f.nonblocking = fl >= 0 && (fl & O_NONBLOCK);
  }
  if ((ask & kAskSockType) && (!(ask & kAskMode) || S_ISSOCK(f.mode))) {
    int type = 0;
    socklen_t len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0) f.sock_type = type;
  }
  if (ask & kAskFamily) {
    sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) == 0) f.family = ss.ss_family;
  }
  errno = saved;
  return f;
}

FdKind fd_kind_of(int fd) noexcept {
  mode_t mode = fd_facts(fd, kAskMode).mode;
  if (S_ISSOCK(mode)) return FdKind::Socket;
  if (S_ISFIFO(mode)) return FdKind::Pipe;
  return FdKind::File;
}

bool fd_is_inet_stream(int fd, bool* nonblocking) noexcept {
  if (fd_facts(fd, kAskSockType).sock_type != SOCK_STREAM) return false;
  int family = fd_facts(fd, kAskFamily).family;
  if (family != AF_INET && family != AF_INET6) return false;
  if (nonblocking) *nonblocking = fd_facts(fd, kAskFlags).nonblocking;
  return true;
}

}  // namespace bonsai
