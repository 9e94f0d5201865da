// SPDX-License-Identifier: MIT
// Socket data calls: send/sendto/sendmsg/sendmmsg, recv/recvfrom/recvmsg/recvmmsg
// and the fortify forms of recv/recvfrom. All shaped as read/write (wrap.h); the
// *mmsg calls by groups of whole messages. A peek (MSG_PEEK) moves nothing: it is
// neither waited nor charged nor counted.
#include <sys/socket.h>

#include "interpose/compressed/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap_vec.h"

using namespace bonsai;

using wrap::at;

// sendmmsg/recvmmsg's flags as <sys/socket.h> declares them (musl: unsigned).
#if defined(__GLIBC__)
using MmsgFlags = int;
#else
using MmsgFlags = unsigned int;
#endif

extern "C" {
#pragma GCC visibility push(default)

[[gnu::noinline]] static ssize_t send_slow(int fd, const void* b, size_t n, int f) {
  return wrap::transfer(CallId::send, fd, n, true, true, f,
                        [&](size_t off, size_t len) { return real::send(fd, at(b, off), len, f); });
}
ssize_t send(int fd, const void* b, size_t n, int f) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send1(fd, b, n, f, CallId::send);
  BONSAI_FAST_CREDIT(send, send, n, (fd, b, n, f));
  return send_slow(fd, b, n, f);
}

[[gnu::noinline]] static ssize_t sendto_slow(int fd, const void* b, size_t n, int f, const sockaddr* a, socklen_t l) {
  return wrap::transfer(CallId::sendto, fd, n, true, true, f, [&](size_t off, size_t len) {
    return real::sendto(fd, at(b, off), len, f, a, l);
  });
}
ssize_t sendto(int fd, const void* b, size_t n, int f, const sockaddr* a, socklen_t l) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send1(fd, b, n, f, CallId::sendto);
  BONSAI_FAST_CREDIT(sendto, sendto, n, (fd, b, n, f, a, l));
  return sendto_slow(fd, b, n, f, a, l);
}

[[gnu::noinline]] static ssize_t sendmsg_slow(int fd, const msghdr* m, int f) {
  return wrap::transfer_msg(CallId::sendmsg, fd, m, f, true, [&](const msghdr* h) { return real::sendmsg(fd, h, f); });
}
ssize_t sendmsg(int fd, const msghdr* m, int f) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send(fd, m->msg_iov, static_cast<int>(m->msg_iovlen), f, CallId::sendmsg);
  BONSAI_FAST(sendmsg, sendmsg, (fd, m, f));
  return sendmsg_slow(fd, m, f);
}

[[gnu::noinline]] static int sendmmsg_slow(int fd, mmsghdr* v, unsigned int n, int f) {
  auto call = [&](mmsghdr* p, unsigned int k, int fl) { return real::sendmmsg(fd, p, k, fl); };
  return wrap::mmsg(CallId::sendmmsg, fd, v, n, f, true, call);
}
int sendmmsg(int fd, mmsghdr* v, unsigned int n, MmsgFlags flags) {
  int f = static_cast<int>(flags);
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_sendmmsg(fd, v, n, f);
  BONSAI_FAST(sendmmsg, sendmmsg, (fd, v, n, f));
  return sendmmsg_slow(fd, v, n, f);
}

[[gnu::noinline]] static ssize_t recv_slow(int fd, void* b, size_t n, int f) {
  return wrap::transfer(CallId::recv, fd, n, true, false, f,
                        [&](size_t off, size_t len) { return real::recv(fd, at(b, off), len, f); });
}
ssize_t recv(int fd, void* b, size_t n, int f) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, b, n, f, CallId::recv);
  if (f & MSG_PEEK) [[unlikely]] return real::recv(fd, b, n, f);  // a peek is free
  BONSAI_FAST_CREDIT(recv, recv, n, (fd, b, n, f));
  return recv_slow(fd, b, n, f);
}

[[gnu::noinline]] static ssize_t __recv_chk_slow(int fd, void* b, size_t n, size_t bl, int f) {
  return wrap::transfer(CallId::recv, fd, n, true, false, f, [&](size_t off, size_t len) {
    return real::__recv_chk(fd, at(b, off), len, bl - off, f);
  });
}
ssize_t __recv_chk(int fd, void* b, size_t n, size_t bl, int f) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, b, n, f, CallId::recv);
  if (f & MSG_PEEK) [[unlikely]] return real::__recv_chk(fd, b, n, bl, f);  // a peek is free
  BONSAI_FAST_CREDIT(recv, __recv_chk, n, (fd, b, n, bl, f));
  return __recv_chk_slow(fd, b, n, bl, f);
}

[[gnu::noinline]] static ssize_t recvfrom_slow(int fd, void* b, size_t n, int f, sockaddr* a, socklen_t* l) {
  return wrap::transfer(CallId::recvfrom, fd, n, true, false, f, [&](size_t off, size_t len) {
    return real::recvfrom(fd, at(b, off), len, f, a, l);
  });
}
ssize_t recvfrom(int fd, void* b, size_t n, int f, sockaddr* a, socklen_t* l) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, b, n, f, CallId::recvfrom);
  if (f & MSG_PEEK) [[unlikely]] return real::recvfrom(fd, b, n, f, a, l);  // a peek is free
  BONSAI_FAST_CREDIT(recvfrom, recvfrom, n, (fd, b, n, f, a, l));
  return recvfrom_slow(fd, b, n, f, a, l);
}

[[gnu::noinline]] static ssize_t __recvfrom_chk_slow(int fd, void* b, size_t n, size_t bl, int f, sockaddr* a, socklen_t* l) {
  return wrap::transfer(CallId::recvfrom, fd, n, true, false, f, [&](size_t off, size_t len) {
    return real::__recvfrom_chk(fd, at(b, off), len, bl - off, f, a, l);
  });
}
ssize_t __recvfrom_chk(int fd, void* b, size_t n, size_t bl, int f, sockaddr* a, socklen_t* l) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, b, n, f, CallId::recvfrom);
  if (f & MSG_PEEK) [[unlikely]] return real::__recvfrom_chk(fd, b, n, bl, f, a, l);  // a peek is free
  BONSAI_FAST_CREDIT(recvfrom, __recvfrom_chk, n, (fd, b, n, bl, f, a, l));
  return __recvfrom_chk_slow(fd, b, n, bl, f, a, l);
}

[[gnu::noinline]] static ssize_t recvmsg_slow(int fd, msghdr* m, int f) {
  return wrap::transfer_msg(CallId::recvmsg, fd, m, f, false, [&](msghdr* h) { return real::recvmsg(fd, h, f); });
}
ssize_t recvmsg(int fd, msghdr* m, int f) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recvmsg(fd, m, f);
  if (f & MSG_PEEK) [[unlikely]] return real::recvmsg(fd, m, f);  // a peek is free
  BONSAI_FAST(recvmsg, recvmsg, (fd, m, f));
  return recvmsg_slow(fd, m, f);
}

[[gnu::noinline]] static int recvmmsg_slow(int fd, mmsghdr* v, unsigned int n, int f, struct timespec* tmo) {
  auto call = [&](mmsghdr* p, unsigned int k, int fl) { return real::recvmmsg(fd, p, k, fl, tmo); };
  return wrap::mmsg(CallId::recvmmsg, fd, v, n, f, false, call);
}
int recvmmsg(int fd, mmsghdr* v, unsigned int n, MmsgFlags flags, struct timespec* tmo) {
  int f = static_cast<int>(flags);
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recvmmsg(fd, v, n, f);
  if (f & MSG_PEEK) [[unlikely]] return real::recvmmsg(fd, v, n, f, tmo);
  BONSAI_FAST(recvmmsg, recvmmsg, (fd, v, n, f, tmo));
  return recvmmsg_slow(fd, v, n, f, tmo);
}

#pragma GCC visibility pop
}  // extern "C"
