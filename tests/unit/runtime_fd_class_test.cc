// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/runtime/fd_class: what fd_kind_of, fd_facts and
// fd_is_inet_stream say of a pipe, sockets (unix, TCP, UDP, non-blocking), a regular
// file, /dev/null and a closed descriptor; that nothing is cached (a number reused for
// another kind of object is classified afresh); and that errno is kept.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/fd_class.h"

using namespace bonsai;

namespace {

// A descriptor closed at the end of the scope.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
  ~Fd() { close(fd); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

}  // namespace

TEST_CASE("fd_class: pipes, sockets, files, /dev/null", "[fd_class]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  Fd r(p[0]), w(p[1]);
  CHECK(fd_kind_of(r.fd) == FdKind::Pipe);
  CHECK(fd_kind_of(w.fd) == FdKind::Pipe);
  CHECK(S_ISFIFO(fd_facts(r.fd, kAskMode).mode));
  CHECK_FALSE(fd_is_inet_stream(r.fd, nullptr));

  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  Fd a(sv[0]), b(sv[1]);
  CHECK(fd_kind_of(a.fd) == FdKind::Socket);
  FdFacts f = fd_facts(a.fd, kAskMode | kAskSockType | kAskFamily);
  CHECK(f.sock_type == SOCK_STREAM);
  CHECK(f.family == AF_UNIX);
  CHECK_FALSE(fd_is_inet_stream(a.fd, nullptr));  // a stream, but not TCP

  FILE* tf = std::tmpfile();
  REQUIRE(tf);
  CHECK(fd_kind_of(fileno(tf)) == FdKind::File);
  CHECK(S_ISREG(fd_facts(fileno(tf), kAskMode).mode));
  std::fclose(tf);

  Fd null(open("/dev/null", O_RDWR | O_CLOEXEC));
  CHECK(fd_kind_of(null.fd) == FdKind::File);  // a character device: "anything else"
  CHECK(S_ISCHR(fd_facts(null.fd, kAskMode).mode));
  // Not a socket: with kAskMode, no SO_TYPE question is asked.
  CHECK(fd_facts(null.fd, kAskMode | kAskSockType).sock_type == 0);
}

TEST_CASE("fd_class: TCP streams, their blocking mode, and UDP", "[fd_class]") {
  Fd tcp(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  bool nb = true;
  CHECK(fd_is_inet_stream(tcp.fd, &nb));
  CHECK_FALSE(nb);
  CHECK(fd_kind_of(tcp.fd) == FdKind::Socket);

  Fd tcp_nb(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  nb = false;
  CHECK(fd_is_inet_stream(tcp_nb.fd, &nb));
  CHECK(nb);
  CHECK(fd_facts(tcp_nb.fd, kAskFlags).nonblocking);

  Fd udp(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  CHECK_FALSE(fd_is_inet_stream(udp.fd, nullptr));
  CHECK(fd_facts(udp.fd, kAskSockType).sock_type == SOCK_DGRAM);

  int s6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s6 >= 0) {  // IPv6 may be off in a container
    Fd tcp6(s6);
    CHECK(fd_is_inet_stream(tcp6.fd, nullptr));
  }
}

TEST_CASE("fd_class: a closed descriptor is unknown, errno kept", "[fd_class]") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  close(p[0]);
  close(p[1]);
  errno = EDOM;
  CHECK(fd_kind_of(p[0]) == FdKind::File);  // unknown counts as a file
  FdFacts f = fd_facts(p[0], kAskMode | kAskFlags | kAskSockType | kAskFamily);
  CHECK(f.mode == 0);
  CHECK_FALSE(f.nonblocking);
  CHECK(f.sock_type == 0);
  CHECK(f.family == 0);
  CHECK_FALSE(fd_is_inet_stream(p[0], nullptr));
  CHECK(errno == EDOM);
}

TEST_CASE("fd_class: nothing is cached: a reused number is classified afresh", "[fd_class]") {
  FILE* tf = std::tmpfile();
  REQUIRE(tf);
  int n = fileno(tf);
  CHECK(fd_kind_of(n) == FdKind::File);
  int p[2];
  REQUIRE(pipe(p) == 0);
  REQUIRE(dup2(p[0], n) == n);  // the same number now holds a pipe
  CHECK(fd_kind_of(n) == FdKind::Pipe);
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  REQUIRE(dup2(sv[0], n) == n);  // and now a socket
  CHECK(fd_kind_of(n) == FdKind::Socket);
  for (int fd : {p[0], p[1], sv[0], sv[1]}) close(fd);
  std::fclose(tf);
}
