// SPDX-License-Identifier: MIT
// The 32-bit x86 ABI in the supervisor's 64-bit form (bonsaictl/supervisor/sv_compat.h): numbers
// found by name, socketcall unpacked from the caller's memory (this test's own, read
// the way the supervisor reads a traced thread's), sizes from 32-bit iovec and msghdr.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "supervisor/sv_compat.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

int self_tid() { return static_cast<int>(::syscall(SYS_gettid)); }

// 32-bit structures need 32-bit addresses: a page below 4 GiB.
struct Low {
  uint8_t* p = static_cast<uint8_t*>(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0));
  ~Low() { munmap(p, 4096); }
  uint64_t at(size_t off) const { return reinterpret_cast<uint64_t>(p + off); }
};

}  // namespace

TEST_CASE("sv_compat: i386 numbers map to the 64-bit entries by name", "[sv_compat]") {
  const __u64 args[6] = {3, 0x1000, 65536, 0, 0, 0};
  SvCompatCall c;
  REQUIRE(sv_compat_call(4, args, self_tid(), c));  // i386 write
  CHECK(c.sc->nr == SYS_write);
  CHECK(c.args[2] == 65536);
  REQUIRE(sv_compat_call(3, args, self_tid(), c));  // read
  CHECK(c.sc->nr == SYS_read);
  REQUIRE(sv_compat_call(180, args, self_tid(), c));  // pread64
  CHECK(c.sc->nr == SYS_pread64);
  REQUIRE(sv_compat_call(239, args, self_tid(), c));  // sendfile64
  CHECK(c.sc->nr == SYS_sendfile);
  CHECK_FALSE(sv_compat_call(20, args, self_tid(), c));  // getpid: none of ours
  CHECK(sv_compat_nr(SYS_write) == 4);
  CHECK(sv_compat_nr(SYS_writev) == 146);
}

TEST_CASE("sv_compat: socketcall's calls are unpacked from 32-bit words", "[sv_compat]") {
  Low low;
  REQUIRE(low.p != MAP_FAILED);
  uint32_t words[6] = {7, 0x2000, 1500, 0, 0, 0};  // send(7, buf, 1500, 0)
  std::memcpy(low.p, words, sizeof words);
  const __u64 args[6] = {9, low.at(0), 0, 0, 0, 0};  // SYS_SEND
  SvCompatCall c;
  REQUIRE(sv_compat_call(102, args, self_tid(), c));
  CHECK(c.sc->nr == SYS_sendto);
  CHECK(c.args[0] == 7);
  CHECK(c.args[2] == 1500);
  CHECK(c.args[4] == 0);  // no address: charged as send
  const __u64 bad[6] = {9, 0x10, 0, 0, 0, 0};  // unreadable words
  CHECK_FALSE(sv_compat_call(102, bad, self_tid(), c));
  const __u64 socket_call[6] = {1, low.at(0), 0, 0, 0, 0};  // SYS_SOCKET: not a data call
  CHECK_FALSE(sv_compat_call(102, socket_call, self_tid(), c));
}

TEST_CASE("sv_compat: sizes of 32-bit iovec, msghdr and mmsghdr arrays", "[sv_compat]") {
  Low low;
  REQUIRE(low.p != MAP_FAILED);
  uint32_t iov[6] = {0x1000, 100, 0x2000, 200, 0x3000, 300};  // three {base, len}
  std::memcpy(low.p, iov, sizeof iov);
  const __u64 wv[6] = {1, low.at(0), 3, 0, 0, 0};
  SvCompatCall c;
  REQUIRE(sv_compat_call(146, wv, self_tid(), c));  // writev
  CHECK(sv_compat_asked(*c.sc, c.args, self_tid()) == 600);
  uint32_t msg[7] = {0, 0, static_cast<uint32_t>(low.at(0)), 2, 0, 0, 0};  // msghdr32 over the first two
  std::memcpy(low.p + 256, msg, sizeof msg);
  const __u64 sm[6] = {1, low.at(256), 0, 0, 0, 0};
  REQUIRE(sv_compat_call(370, sm, self_tid(), c));  // sendmsg
  CHECK(c.sc->nr == SYS_sendmsg);
  CHECK(sv_compat_asked(*c.sc, c.args, self_tid()) == 300);
  uint32_t mm[16] = {};  // two mmsghdr32 (32 bytes each), each the msghdr above
  std::memcpy(mm, msg, sizeof msg);
  std::memcpy(mm + 8, msg, sizeof msg);
  std::memcpy(low.p + 512, mm, sizeof mm);
  const __u64 smm[6] = {1, low.at(512), 2, 0, 0, 0};
  REQUIRE(sv_compat_call(345, smm, self_tid(), c));  // sendmmsg
  CHECK(sv_compat_asked(*c.sc, c.args, self_tid()) == 600);
  const __u64 huge[6] = {1, low.at(0), 5000, 0, 0, 0};  // more than UIO_MAXIOV: unknown
  REQUIRE(sv_compat_call(146, huge, self_tid(), c));
  CHECK(sv_compat_asked(*c.sc, c.args, self_tid()) == UINT64_MAX);
}
