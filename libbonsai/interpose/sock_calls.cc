// SPDX-License-Identifier: MIT
// Socket data calls: send/sendto/sendmsg/sendmmsg, recv/recvfrom/recvmsg/recvmmsg
// and the fortify forms of recv/recvfrom.
#include <sys/socket.h>

#include "interpose/compress_hooks.h"
#include "interpose/real.h"
#include "interpose/wrap.h"

using namespace bonsai;

namespace {
inline char* at(void* b, size_t off) { return static_cast<char*>(b) + off; }
inline const char* at(const void* b, size_t off) { return static_cast<const char*>(b) + off; }

// Bytes moved by the first `done` messages of a sendmmsg/recvmmsg.
ssize_t mmsg_moved(int done, const mmsghdr* v) {
  if (done < 0) return -1;
  ssize_t total = 0;
  for (int i = 0; i < done; ++i) total += v[i].msg_len;
  return total;
}
}  // namespace

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
  return wrap::simple<ssize_t>(CallId::sendmsg, fd, true, [&] { return real::sendmsg(fd, m, f); },
                               wrap::moved_ssize);
}
ssize_t sendmsg(int fd, const msghdr* m, int f) {
  if (compress::tx_framed(fd)) [[unlikely]] return compress::tx_send(fd, m->msg_iov, static_cast<int>(m->msg_iovlen), f, CallId::sendmsg);
  BONSAI_FAST(sendmsg, sendmsg, (fd, m, f));
  return sendmsg_slow(fd, m, f);
}

int sendmmsg(int fd, mmsghdr* v, unsigned int n, int f) {
  if (!limiter_active()) return real::sendmmsg(fd, v, n, f);
  Ticket t = ticket_for(CallId::sendmmsg, fd);
  ticket_wait(t, true);
  int r = real::sendmmsg(fd, v, n, f);
  ticket_done(t, mmsg_moved(r, v));
  return r;
}

[[gnu::noinline]] static ssize_t recv_slow(int fd, void* b, size_t n, int f) {
  return wrap::transfer(CallId::recv, fd, n, true, false, f,
                        [&](size_t off, size_t len) { return real::recv(fd, at(b, off), len, f); });
}
ssize_t recv(int fd, void* b, size_t n, int f) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recv1(fd, b, n, f, CallId::recv);
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
  BONSAI_FAST_CREDIT(recvfrom, __recvfrom_chk, n, (fd, b, n, bl, f, a, l));
  return __recvfrom_chk_slow(fd, b, n, bl, f, a, l);
}

[[gnu::noinline]] static ssize_t recvmsg_slow(int fd, msghdr* m, int f) {
  return wrap::simple<ssize_t>(CallId::recvmsg, fd, true, [&] { return real::recvmsg(fd, m, f); },
                               wrap::moved_ssize);
}
ssize_t recvmsg(int fd, msghdr* m, int f) {
  if (compress::rx_framed(fd)) [[unlikely]] return compress::rx_recvmsg(fd, m, f);
  BONSAI_FAST(recvmsg, recvmsg, (fd, m, f));
  return recvmsg_slow(fd, m, f);
}

int recvmmsg(int fd, mmsghdr* v, unsigned int n, int f, struct timespec* tmo) {
  if (!limiter_active()) return real::recvmmsg(fd, v, n, f, tmo);
  Ticket t = ticket_for(CallId::recvmmsg, fd);
  ticket_wait(t, true);
  int r = real::recvmmsg(fd, v, n, f, tmo);
  ticket_done(t, mmsg_moved(r, v));
  return r;
}

#pragma GCC visibility pop
}  // extern "C"
