// SPDX-License-Identifier: MIT
// Supervised mode's system-call table: every data call name of the limit language a
// raw system call can stand for is reachable, and a service's limits notify exactly
// the system calls that can be charged to one of its rules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sys/syscall.h>

#include "supervisor/sv_syscalls.h"
#include "abi/limit_parse.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

std::vector<int> notified(const char* limits) {
  LimitSet set{};
  ParseError err;
  REQUIRE(limit_parse(limits, set, err));
  return sv_notified_syscalls(set);
}

bool has(const std::vector<int>& v, int nr) { return std::find(v.begin(), v.end(), nr) != v.end(); }

}  // namespace

TEST_CASE("sv_syscalls: only the system calls a rule can charge are notified") {
  auto w = notified("write=1MiB/s");
  CHECK(has(w, SYS_write));
  CHECK_FALSE(has(w, SYS_read));
  CHECK_FALSE(has(w, SYS_pwrite64));
  auto ws = notified("writes=1MiB/s");
  for (int nr : {SYS_write, SYS_pwrite64, SYS_writev, SYS_pwritev, SYS_pwritev2, SYS_sendto, SYS_sendmsg,
                 SYS_sendmmsg, SYS_sendfile, SYS_splice, SYS_tee, SYS_vmsplice, SYS_copy_file_range})
    CHECK(has(ws, nr));
  CHECK_FALSE(has(ws, SYS_read));
  // A reads cap reaches the zero-copy calls too: they read their source.
  auto rs = notified("reads=1MiB/s");
  for (int nr : {SYS_read, SYS_pread64, SYS_readv, SYS_preadv, SYS_preadv2, SYS_recvfrom, SYS_recvmsg,
                 SYS_recvmmsg, SYS_sendfile, SYS_splice, SYS_copy_file_range})
    CHECK(has(rs, nr));
  CHECK_FALSE(has(rs, SYS_write));
  // send (sendto without an address) and sendto are one system call.
  CHECK(has(notified("send=1MiB/s"), SYS_sendto));
  // fd kinds: the system call is notified, its descriptor decides at run time.
  CHECK(has(notified("writes=1MiB/s:fd=pipe"), SYS_write));
  // Call-rate limits on metadata calls.
  auto meta = notified("open=100/s,fsync=10/s,rename=5/s");
  for (int nr : {SYS_open, SYS_fsync, SYS_rename, SYS_renameat, SYS_renameat2}) CHECK(has(meta, nr));
  CHECK_FALSE(has(meta, SYS_openat));
  CHECK(sv_notified_syscalls(LimitSet{}).empty());
}

TEST_CASE("sv_syscalls: the table names each system call once, with sane argument positions") {
  std::vector<int> seen;
  for (const auto& s : sv_syscalls()) {
    CHECK_FALSE(has(seen, s.nr));
    seen.push_back(s.nr);
    CHECK(sv_syscall(s.nr) == &s);
    CHECK(s.fd_arg < 6);
    CHECK(s.size_arg < 6);
    if (s.size == SvSize::Iov || s.size == SvSize::Mmsg) CHECK(s.size_arg >= 1);
    CHECK(static_cast<size_t>(s.call) < kCallCount);
  }
  CHECK(sv_syscall(SYS_getpid) == nullptr);
}
