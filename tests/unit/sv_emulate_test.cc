// SPDX-License-Identifier: MIT
// Supervised mode's reservations and emulated zero-copy calls (bonsaictl/supervisor/sv_emulate.h):
// how much a call whose size shows only afterwards reserves, how a reservation is
// settled, which descriptor ends let the supervisor make a call itself, and such a
// call made on this process's own descriptors (pidfd_getfd and process_vm_* on self).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "sv_temp_file.h"
#include "supervisor/sv_emulate.h"
#include "abi/limit_parse.h"

using namespace bonsai;
using namespace bonsai::ctl;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace {

BucketParams params_of(const char* limits) {
  LimitSet set{};
  ParseError err;
  REQUIRE(limit_parse(limits, set, err));
  REQUIRE(set.count >= 1);
  return bucket_params(set.rules[0]);
}

using sv_test::TempFile;

}  // namespace

TEST_CASE("sv_emulate: a call reserves one chunk of its smaller byte bucket, at most 1 MiB", "[sv_emulate]") {
  BucketParams slow = params_of("writes=5MB/s");  // chunk: rate/128 = 39062, in whole pages 36864
  BucketParams fast = params_of("writes=100MiB/s");
  BucketParams huge = params_of("writes=10GiB/s");
  BucketParams calls = params_of("sendfile=100/s");
  REQUIRE(slow.chunk == 36864);
  CHECK(sv_reserve_bytes(4u << 20, &slow, nullptr) == 36864);  // Go's 4 MiB sendfile: one chunk
  CHECK(sv_reserve_bytes(4u << 20, nullptr, &slow) == 36864);
  CHECK(sv_reserve_bytes(1000, &slow, nullptr) == 1000);       // a small call: what it asks
  CHECK(sv_reserve_bytes(UINT64_MAX, &slow, nullptr) == 36864);  // unknown size: one chunk
  CHECK(sv_reserve_bytes(4u << 20, &fast, &slow) == 36864);    // the smaller chunk of two buckets
  CHECK(sv_reserve_bytes(4u << 20, &slow, &fast) == 36864);
  CHECK(sv_reserve_bytes(64u << 20, &huge, nullptr) == kSvReserveMax);  // 80 MiB chunk: cut to 1 MiB
  CHECK(sv_reserve_bytes(4u << 20, &calls, nullptr) == 0);     // call-rate only: nothing to reserve
  CHECK(sv_reserve_bytes(4u << 20, &calls, &slow) == 36864);
  CHECK(sv_reserve_bytes(4u << 20, nullptr, nullptr) == 0);
  CHECK(sv_reserve_bytes(0, &slow, nullptr) == 0);             // asks nothing
  BucketParams tiny = params_of("writes=1KB/s");  // chunk never below 16 KiB
  CHECK(sv_reserve_bytes(1u << 20, &tiny, nullptr) == 16384);
}

TEST_CASE("sv_emulate: settling gives back what did not move, charges late what moved beyond", "[sv_emulate]") {
  SvSettle s = sv_settle(39062, 0);  // EAGAIN: all of it back
  CHECK(s.give_back == 39062);
  CHECK(s.charge_late == 0);
  s = sv_settle(39062, 39062);
  CHECK(s.give_back == 0);
  CHECK(s.charge_late == 0);
  s = sv_settle(39062, 10000);
  CHECK(s.give_back == 29062);
  CHECK(s.charge_late == 0);
  s = sv_settle(16384, 65536);  // a read that moved more than its reservation
  CHECK(s.give_back == 0);
  CHECK(s.charge_late == 49152);
  s = sv_settle(0, 4096);  // nothing reserved (a call-rate bucket): all late
  CHECK(s.charge_late == 4096);
}

TEST_CASE("sv_emulate: the supervisor makes a call itself only when no end can wait", "[sv_emulate]") {
  CHECK(sv_end_never_waits(S_IFREG | 0644, O_RDONLY, false));
  CHECK(sv_end_never_waits(S_IFBLK | 0644, O_RDWR, false));
  CHECK(sv_end_never_waits(S_IFSOCK | 0777, O_RDWR | O_NONBLOCK, false));
  CHECK(sv_end_never_waits(S_IFIFO | 0600, O_WRONLY | O_NONBLOCK, false));
  CHECK_FALSE(sv_end_never_waits(S_IFSOCK | 0777, O_RDWR, false));  // a blocking socket waits for room
  CHECK_FALSE(sv_end_never_waits(S_IFSOCK | 0777, O_RDWR, true));   // SPLICE_F_NONBLOCK: pipes only
  CHECK_FALSE(sv_end_never_waits(S_IFIFO | 0600, O_RDONLY, false));
  CHECK(sv_end_never_waits(S_IFIFO | 0600, O_RDONLY, true));
  CHECK_FALSE(sv_end_never_waits(S_IFCHR | 0620, O_RDWR, false));   // a tty may wait
}

TEST_CASE("sv_emulate: a sendfile made for a process moves at most its bound and updates its offset", "[sv_emulate]") {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) { WARN("no pidfd_open"); return; }
  TempFile src(200000);
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  const SvSyscall* sc = sv_syscall(SYS_sendfile);
  REQUIRE(sc);

  // sendfile(out, in, &off, 4 MiB) with off = 1000: cut to 40000 bytes from offset 1000.
  loff_t off = 1000;
  __u64 args[6] = {static_cast<__u64>(sv[0]), static_cast<__u64>(src.fd), reinterpret_cast<__u64>(&off), 4u << 20, 0, 0};
  SvEmu e;
  int copy_ok = sv_emu_prepare(*sc, args, pidfd, 40000, e);
  if (!copy_ok) {
    ::close(sv[0]), ::close(sv[1]), ::close(pidfd);
    { WARN("pidfd_getfd refused (no ptrace access to self?)"); return; }
  }
  CHECK(e.count == 40000);
  int64_t r = sv_emu_perform(e, ::getpid());
  sv_emu_close(e);
  CHECK(r == 40000);
  CHECK(off == 41000);                                // written back into "the target"
  CHECK(::lseek(src.fd, 0, SEEK_CUR) == 0);           // an offset pointer leaves the position alone
  char buf[40000];
  REQUIRE(::read(sv[1], buf, sizeof buf) == 40000);
  CHECK(buf[0] == static_cast<char>('a' + 1000 % 26));

  // No offset pointer: the shared file position moves (the copy shares the description).
  args[2] = 0;
  REQUIRE(sv_emu_prepare(*sc, args, pidfd, 30000, e));
  CHECK(sv_emu_perform(e, ::getpid()) == 30000);
  sv_emu_close(e);
  CHECK(::lseek(src.fd, 0, SEEK_CUR) == 30000);

  // A full non-blocking socket: EAGAIN, nothing moved, not a wait.
  args[2] = reinterpret_cast<__u64>(&off);
  int64_t moved = 0;
  for (int i = 0; i < 1000; ++i) {
    off = 0;
    REQUIRE(sv_emu_prepare(*sc, args, pidfd, 40000, e));
    r = sv_emu_perform(e, ::getpid());
    sv_emu_close(e);
    if (r < 0) break;
    moved += r;
  }
  CHECK(r == -EAGAIN);
  CHECK(moved > 0);

  // A blocking socket could wait for room: not emulated, nothing left open.
  int bsv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, bsv) == 0);
  args[0] = static_cast<__u64>(bsv[0]);
  CHECK_FALSE(sv_emu_prepare(*sc, args, pidfd, 40000, e));
  CHECK(e.nr == -1);
  CHECK(e.in_fd == -1);
  CHECK(e.out_fd == -1);
  // Not a zero-copy call.
  CHECK_FALSE(sv_emu_prepare(*sv_syscall(SYS_write), args, pidfd, 40000, e));
  for (int fd : {sv[0], sv[1], bsv[0], bsv[1], pidfd}) ::close(fd);
}

TEST_CASE("sv_emulate: copy_file_range made for a process updates both offsets", "[sv_emulate]") {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) { WARN("no pidfd_open"); return; }
  TempFile src(100000), dst(0);
  const SvSyscall* sc = sv_syscall(SYS_copy_file_range);
  REQUIRE(sc);
  loff_t off_in = 500, off_out = 0;
  __u64 args[6] = {static_cast<__u64>(src.fd), reinterpret_cast<__u64>(&off_in), static_cast<__u64>(dst.fd),
                   reinterpret_cast<__u64>(&off_out), 1u << 30, 0};
  SvEmu e;
  if (!sv_emu_prepare(*sc, args, pidfd, 16384, e)) {
    ::close(pidfd);
    { WARN("pidfd_getfd refused"); return; }
  }
  CHECK(sv_emu_perform(e, ::getpid()) == 16384);
  sv_emu_close(e);
  CHECK(off_in == 500 + 16384);
  CHECK(off_out == 16384);
  struct stat st;
  REQUIRE(::fstat(dst.fd, &st) == 0);
  CHECK(st.st_size == 16384);
  // An offset pointer that cannot be read: EFAULT, as the kernel would say.
  args[1] = 8;  // unmapped
  REQUIRE(sv_emu_prepare(*sc, args, pidfd, 16384, e));
  CHECK(sv_emu_perform(e, ::getpid()) == -EFAULT);
  sv_emu_close(e);
  ::close(pidfd);
}

TEST_CASE("sv_emulate: with many calls held, each reserves its share of one chunk, at least 4 KiB", "[sv_emulate]") {
  CHECK(sv_reserve_share(39062, 0) == 39062);  // alone: the whole chunk
  CHECK(sv_reserve_share(39062, 1) == 19531);
  CHECK(sv_reserve_share(39062, 8) == 4340);
  CHECK(sv_reserve_share(39062, 39) == kSvReserveFloor);  // 40 threads: the floor, not 976
  CHECK(sv_reserve_share(39062, 1000) == kSvReserveFloor);
  CHECK(sv_reserve_share(1000, 39) == 1000);   // a small call keeps what it asks
  CHECK(sv_reserve_share(5000, 1) == 4096);    // cut, never below the floor
  CHECK(sv_reserve_share(0, 3) == 0);
}
