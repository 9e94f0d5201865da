// SPDX-License-Identifier: MIT
// Protected reads the supervisor makes and times (bonsaictl/supervisor/sv_protect.h):
// which calls and arguments qualify, the O_DIRECT and scatter arithmetic, which system
// calls a protect: notifies, and reads made for this very process (pidfd_getfd and
// process_vm_writev on self): exact data, RWF_NOWAIT from the page cache, what is not
// made, a call gone before delivery, and a worker's read whose call is gone.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sv_temp_file.h"
#include "abi/limit_parse.h"
#include "supervisor/sv_protect.h"
#include "supervisor/sv_target.h"

using namespace bonsai;
using namespace bonsai::ctl;

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace {

using sv_test::TempFile;

char at(size_t i) { return static_cast<char>('a' + i % 26); }

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("sv_protect: reads at an offset of their own are timed, not those at the file position", "[sv_protect]") {
  SvTimedArgs a;
  __u64 r[6] = {5, 0x1000, 4096, 0, 0, 0};
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_read), r, a));  // an answer lost to a signal would skip data
  __u64 v[6] = {5, 0x2000, 3, 0, 0, 0};
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_readv), v, a));
  __u64 p[6] = {5, 0x1000, 4096, 8192, 0, 0};
  REQUIRE(sv_timed_args(*sv_syscall(SYS_pread64), p, a));
  CHECK(a.nr == SYS_pread64);
  CHECK(a.fd == 5);
  CHECK(a.addr == 0x1000);
  CHECK(a.count == 4096);
  CHECK(a.off == 8192);
  CHECK(a.iovcnt == 0);
  p[3] = static_cast<__u64>(-1);  // a negative offset: EINVAL is the kernel's to say
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_pread64), p, a));
  __u64 pv[6] = {5, 0x2000, 2, 100, 0, 0};
  REQUIRE(sv_timed_args(*sv_syscall(SYS_preadv), pv, a));
  CHECK(a.iovcnt == 2);
  CHECK(a.off == 100);
  pv[2] = 0;  // no iovec, or more than the kernel takes: its answer
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_preadv), pv, a));
  pv[2] = kSvTimedMaxIov + 1;
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_preadv), pv, a));
  __u64 p2[6] = {5, 0x2000, 2, 4096, 0, RWF_HIPRI};
  REQUIRE(sv_timed_args(*sv_syscall(SYS_preadv2), p2, a));
  CHECK(a.off == 4096);
  CHECK(a.rwf == RWF_HIPRI);
  p2[3] = static_cast<__u64>(-1);  // -1: the file position, as readv
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_preadv2), p2, a));
  __u64 w[6] = {5, 0x1000, 4096, 0, 0, 0};
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_pwrite64), w, a));
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_recvfrom), w, a));
  p[3] = 0;
  p[0] = static_cast<__u64>(-1);
  CHECK_FALSE(sv_timed_args(*sv_syscall(SYS_pread64), p, a));
}

TEST_CASE("sv_protect: only regular files and block devices; O_DIRECT buffers as the kernel checks them", "[sv_protect]") {
  CHECK(sv_timed_kind_ok(S_IFREG | 0644));
  CHECK(sv_timed_kind_ok(S_IFBLK | 0660));
  CHECK_FALSE(sv_timed_kind_ok(S_IFIFO | 0600));  // a read may wait for a writer, and consumes
  CHECK_FALSE(sv_timed_kind_ok(S_IFSOCK | 0777));
  CHECK_FALSE(sv_timed_kind_ok(S_IFCHR | 0620));
  SvSeg ok[2] = {{0x10000, 4096}, {0x30000, 8192}};
  CHECK(sv_timed_direct_ok(ok, 2, 4096));
  SvSeg base[2] = {{0x10000, 4096}, {0x30200, 8192}};
  CHECK_FALSE(sv_timed_direct_ok(base, 2, 4096));
  SvSeg len[1] = {{0x10000, 1000}};
  CHECK_FALSE(sv_timed_direct_ok(len, 1, 4096));
  CHECK(sv_timed_direct_ok(len, 1, 8));
}

TEST_CASE("sv_protect: a short read fills the target's segments in order", "[sv_protect]") {
  SvSeg s[3] = {{0x1000, 100}, {0x2000, 200}, {0x3000, 300}};
  CHECK(sv_timed_cut(s, 3, 250) == 2);
  CHECK(s[0].len == 100);
  CHECK(s[1].len == 150);
  SvSeg t[2] = {{0x1000, 100}, {0x2000, 200}};
  CHECK(sv_timed_cut(t, 2, 0) == 0);
  CHECK(sv_timed_cut(t, 2, 1000) == 2);
  CHECK(t[1].len == 200);
}

TEST_CASE("sv_protect: a protect: notifies the reads it times, limits or not", "[sv_protect]") {
  LimitSet none{};
  std::vector<int> n = sv_notified_syscalls(none, call_bit(CallId::pread));
  CHECK(n == std::vector<int>{SYS_pread64});
  n = sv_notified_syscalls(none, call_bit(CallId::read) | call_bit(CallId::preadv));
  CHECK(has(n, SYS_preadv));
  CHECK(has(n, SYS_preadv2));  // charged and timed as preadv (at an offset)
  CHECK_FALSE(has(n, SYS_read));  // not timed in supervised programs: not notified for it
  CHECK_FALSE(has(n, SYS_sendfile));  // a zero-copy call is not a protected read
  CHECK_FALSE(has(n, SYS_pread64));
  CHECK(sv_notified_syscalls(none, call_bit(CallId::readv) | call_bit(CallId::write) | call_bit(CallId::recv)).empty());
  CHECK(sv_notified_syscalls(none, 0).empty());
  LimitSet w{};
  ParseError err;
  REQUIRE(limit_parse("writes=1MB/s", w, err));
  n = sv_notified_syscalls(w, call_bit(CallId::pread));
  CHECK(has(n, SYS_write));
  CHECK(has(n, SYS_pread64));
  CHECK_FALSE(has(n, SYS_read));
}

TEST_CASE("sv_protect: reads made for a process: exact, nothing made that should not be", "[sv_protect]") {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) { WARN("no pidfd_open"); return; }
  TempFile f(300000);
  auto job = [&](int nr, int fd, __u64 a1, __u64 a2, __u64 a3, __u64 a5 = 0) {
    SvTimedRead t;
    __u64 args[6] = {static_cast<__u64>(fd), a1, a2, a3, 0, a5};
    REQUIRE(sv_timed_args(*sv_syscall(nr), args, t.args));
    t.tid = ::getpid();
    t.fd_copy = sv_fd_copy(pidfd, fd);
    return t;
  };
  int probe = sv_fd_copy(pidfd, f.fd);
  if (probe < 0) {
    ::close(pidfd);
    WARN("pidfd_getfd refused (no ptrace access to self?)");
    return;
  }
  ::close(probe);
  SvTimedScratch sc;
  std::string buf(100000, '\0');

  // pread at 1000 from the page cache, in the loop's way (RWF_NOWAIT): exact, timed, no position moved.
  SvTimedRead t = job(SYS_pread64, f.fd, reinterpret_cast<__u64>(buf.data()), 50000, 1000);
  CHECK(sv_timed_make(t, sc, true) == SvTimedOutcome::Made);
  CHECK(sv_timed_copy_out(t, sc));
  ::close(t.fd_copy);
  CHECK(t.r == 50000);
  CHECK(t.ns > 0);
  CHECK(buf[0] == at(1000));
  CHECK(buf[49999] == at(50999));
  CHECK(::lseek(f.fd, 0, SEEK_CUR) == 0);

  // preadv over three pieces up to the end of the file, in a worker's way: a short count
  // there is the file's answer.
  std::string a(10, '\0'), b(30000, '\0'), c(40000, '\0');
  iovec v[3] = {{a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  t = job(SYS_preadv, f.fd, reinterpret_cast<__u64>(v), 3, 250000);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  CHECK(sv_timed_copy_out(t, sc));
  ::close(t.fd_copy);
  CHECK(t.r == 50000);
  CHECK(a[0] == at(250000));
  CHECK(b[0] == at(250010));
  CHECK(c[0] == at(280010));
  CHECK(c[19989] == at(299999));
  CHECK(c[19990] == '\0');
  // The same from the loop (RWF_NOWAIT): short at the end of the file, kept.
  t = job(SYS_preadv, f.fd, reinterpret_cast<__u64>(v), 3, 250000);
  CHECK(sv_timed_make(t, sc, true) == SvTimedOutcome::Made);
  ::close(t.fd_copy);
  CHECK(t.r == 50000);

  // preadv2 with the target's own flags.
  iovec one[1] = {{buf.data(), 100}};
  t = job(SYS_preadv2, f.fd, reinterpret_cast<__u64>(one), 1, 10, 0);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  CHECK(sv_timed_copy_out(t, sc));
  ::close(t.fd_copy);
  CHECK(t.r == 100);
  CHECK(buf[0] == at(10));

  // The target's buffer unwritable: made, then not delivered: not made, nothing answered.
  t = job(SYS_pread64, f.fd, 8, 1000, 0);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  sv_timed_deliver(t, sc, false);
  ::close(t.fd_copy);
  CHECK_FALSE(t.made);
  CHECK(t.answered == -1);

  // Delivered to no listener (the call gone): copied, not answered.
  std::memset(buf.data(), 0, 100);
  t = job(SYS_pread64, f.fd, reinterpret_cast<__u64>(buf.data()), 100, 110);
  t.lfd = -1;
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  sv_timed_deliver(t, sc, false);
  CHECK(t.made);
  CHECK(t.answered == 0);
  CHECK(buf[0] == at(110));
  // A worker checks first that the call is still there: nothing written into the target.
  std::memset(buf.data(), 0, 100);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  sv_timed_deliver(t, sc, true);
  ::close(t.fd_copy);
  CHECK(t.answered == 0);
  CHECK(buf[0] == '\0');

  // An error is the call's answer, made and timed (a descriptor open for writing only).
  int wo = ::open(f.path.c_str(), O_WRONLY);
  REQUIRE(wo >= 0);
  t = job(SYS_pread64, wo, reinterpret_cast<__u64>(buf.data()), 100, 0);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
  CHECK(t.r == -EBADF);
  ::close(t.fd_copy);
  ::close(wo);

  // A pipe: never made (it may wait, and what it reads is gone; a pread fails ESPIPE there anyway).
  int pp[2];
  REQUIRE(::pipe(pp) == 0);
  REQUIRE(::write(pp[1], "xyz", 3) == 3);
  t = job(SYS_pread64, pp[0], reinterpret_cast<__u64>(buf.data()), 3, 0);
  CHECK(sv_timed_make(t, sc, true) == SvTimedOutcome::NotMade);
  CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::NotMade);
  ::close(t.fd_copy);
  char back[3];
  CHECK(::read(pp[0], back, 3) == 3);  // still there
  ::close(pp[0]);
  ::close(pp[1]);

  // O_DIRECT never in the loop (it waits for the device whatever RWF_NOWAIT says).
  int d = ::open(f.path.c_str(), O_RDONLY | O_DIRECT);
  if (d >= 0) {
    void* al = nullptr;
    REQUIRE(::posix_memalign(&al, 4096, 8192) == 0);
    t = job(SYS_pread64, d, reinterpret_cast<__u64>(al), 8192, 4096);
    CHECK(sv_timed_make(t, sc, true) == SvTimedOutcome::Blocks);
    CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::Made);
    CHECK(sv_timed_copy_out(t, sc));
    CHECK(t.r == 8192);
    CHECK(static_cast<char*>(al)[0] == at(4096));
    ::close(t.fd_copy);
    // A buffer the kernel would refuse: not made (the kernel then says EINVAL).
    t = job(SYS_pread64, d, reinterpret_cast<__u64>(static_cast<char*>(al) + 512), 4096, 4096);
    CHECK(sv_timed_make(t, sc, false) == SvTimedOutcome::NotMade);
    ::close(t.fd_copy);
    ::close(d);
    std::free(al);
  }
  ::close(pidfd);
}

TEST_CASE("sv_protect: a worker's read whose call is gone writes nothing into the target", "[sv_protect]") {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) { WARN("no pidfd_open"); return; }
  TempFile f(100000);
  std::string buf(4096, '\0');
  buf[0] = 'Z';
  SvTimedRead t;
  __u64 args[6] = {static_cast<__u64>(f.fd), reinterpret_cast<__u64>(buf.data()), 4096, 0, 0, 0};
  REQUIRE(sv_timed_args(*sv_syscall(SYS_pread64), args, t.args));
  t.tid = ::getpid();
  t.lfd = -1;  // no listener: the answer fails, as for a call a signal interrupted
  t.fd_copy = sv_fd_copy(pidfd, f.fd);
  if (t.fd_copy < 0) {
    ::close(pidfd);
    WARN("pidfd_getfd refused");
    return;
  }
  SvTimedPool pool;
  REQUIRE(pool.submit(t));
  CHECK(pool.in_flight() == 1);
  std::vector<SvTimedRead> done;
  for (int i = 0; i < 200 && done.empty(); ++i) {
    pollfd pf{pool.event_fd(), POLLIN, 0};
    ::poll(&pf, 1, 10);
    pool.done(done);
  }
  REQUIRE(done.size() == 1);
  CHECK(pool.in_flight() == 0);
  CHECK(done[0].made);
  CHECK(done[0].r == 4096);
  CHECK(done[0].answered == 0);
  CHECK(done[0].fd_copy == -1);                // the worker closed it
  CHECK(buf[0] == 'Z');                        // nor was it written into the (gone) call's buffer
  pool.stop();
  ::close(pidfd);
}
