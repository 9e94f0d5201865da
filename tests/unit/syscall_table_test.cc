// SPDX-License-Identifier: MIT
// abi/syscall_table.h, the one table of system calls by number: its names and numbers
// as libseccomp knows them (the i386 columns against the map bonsaictl built from
// libseccomp's names before the table, over every number 0..1023), and against the
// library's syscall() switch (interpose/syscall_call.cc) and strict mode's marked
// numbers (interpose/strict_calls.cc) it replaces.
#include <catch2/catch.hpp>

#include <seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <utility>

#include "supervisor/sv_compat.h"
#include "supervisor/sv_syscalls.h"
#include "abi/syscall_table.h"

using namespace bonsai;
using namespace bonsai::ctl;

namespace {

// The library's syscall() before the table (interpose/syscall_call.cc, its switch): the
// call each number was limited as (count_: made as asked, unlimited).
CallId old_library_call(long nr) {
  switch (nr) {
    case SYS_read: return CallId::read;
    case SYS_write: return CallId::write;
    case SYS_pread64: return CallId::pread;
    case SYS_pwrite64: return CallId::pwrite;
    case SYS_readv: return CallId::readv;
    case SYS_writev: return CallId::writev;
    case SYS_preadv: return CallId::preadv;
    case SYS_pwritev: return CallId::pwritev;
    case SYS_preadv2: return CallId::preadv;
    case SYS_pwritev2: return CallId::pwritev;
    case SYS_sendto: return CallId::sendto;
    case SYS_recvfrom: return CallId::recvfrom;
    case SYS_sendmsg: return CallId::sendmsg;
    case SYS_recvmsg: return CallId::recvmsg;
    case SYS_sendmmsg: return CallId::sendmmsg;
    case SYS_recvmmsg: return CallId::recvmmsg;
    case SYS_sendfile: return CallId::sendfile;
    case SYS_splice: return CallId::splice;
    case SYS_copy_file_range: return CallId::copy_file_range;
    case SYS_tee: return CallId::tee;
    case SYS_vmsplice: return CallId::vmsplice;
    default: return CallId::count_;
  }
}

// Strict mode's syscall() before the table (interpose/strict_calls.cc, marks_first_arg),
// less io_setup (marked, but no call of the table).
bool old_marks_first_arg(long nr) {
  switch (nr) {
    case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: case SYS_readv: case SYS_writev:
    case SYS_preadv: case SYS_pwritev: case SYS_preadv2: case SYS_pwritev2: case SYS_sendto: case SYS_recvfrom:
    case SYS_sendmsg: case SYS_recvmsg: case SYS_sendmmsg: case SYS_recvmmsg: case SYS_sendfile: case SYS_splice:
    case SYS_tee: case SYS_vmsplice: case SYS_copy_file_range: case SYS_close: case SYS_connect: case SYS_accept:
    case SYS_accept4: case SYS_fsync: case SYS_fdatasync: case SYS_openat: case SYS_openat2: case SYS_unlinkat:
    case SYS_renameat: case SYS_renameat2: case SYS_mkdirat:
      return true;
    default:
      return false;
  }
}

// Where the library's switch found each call's arguments: the buffer and size (or the
// vector, the message), a file offset the pieces advance, the flags it read
// (MSG_PEEK: not limited; MSG_DONTWAIT or RWF_NOWAIT: do not wait), and for zero-copy
// calls the destination, source and source offset.
struct LibraryArgs {
  long nr;
  SysSize size;
  int size_arg;
  int off_arg;
  SysFlags flags;
  int flags_arg;
  int dest, src, src_off;  // zero-copy only, else -1
};
constexpr LibraryArgs kOldLibraryArgs[] = {
    {SYS_read, SysSize::Arg, 2, -1, SysFlags::None, -1, -1, -1, -1},
    {SYS_write, SysSize::Arg, 2, -1, SysFlags::None, -1, -1, -1, -1},
    {SYS_pread64, SysSize::Arg, 2, 3, SysFlags::None, -1, -1, -1, -1},
    {SYS_pwrite64, SysSize::Arg, 2, 3, SysFlags::None, -1, -1, -1, -1},
    {SYS_readv, SysSize::Iov, 2, -1, SysFlags::None, -1, -1, -1, -1},
    {SYS_writev, SysSize::Iov, 2, -1, SysFlags::None, -1, -1, -1, -1},
    {SYS_preadv, SysSize::Iov, 2, 3, SysFlags::None, -1, -1, -1, -1},
    {SYS_pwritev, SysSize::Iov, 2, 3, SysFlags::None, -1, -1, -1, -1},
    {SYS_preadv2, SysSize::Iov, 2, 3, SysFlags::Rwf, 5, -1, -1, -1},
    {SYS_pwritev2, SysSize::Iov, 2, 3, SysFlags::Rwf, 5, -1, -1, -1},
    {SYS_sendto, SysSize::Arg, 2, -1, SysFlags::Msg, 3, -1, -1, -1},
    {SYS_recvfrom, SysSize::Arg, 2, -1, SysFlags::Msg, 3, -1, -1, -1},
    {SYS_sendmsg, SysSize::Msg, 1, -1, SysFlags::Msg, 2, -1, -1, -1},
    {SYS_recvmsg, SysSize::Msg, 1, -1, SysFlags::Msg, 2, -1, -1, -1},
    {SYS_sendmmsg, SysSize::Mmsg, 2, -1, SysFlags::Msg, 3, -1, -1, -1},
    {SYS_recvmmsg, SysSize::Mmsg, 2, -1, SysFlags::Msg, 3, -1, -1, -1},
    {SYS_sendfile, SysSize::Arg, 3, -1, SysFlags::None, -1, 0, 1, 2},
    {SYS_splice, SysSize::Arg, 4, -1, SysFlags::Splice, 5, 2, 0, 1},
    {SYS_copy_file_range, SysSize::Arg, 4, -1, SysFlags::None, -1, 2, 0, 1},
    {SYS_tee, SysSize::Arg, 2, -1, SysFlags::Splice, 3, 1, 0, -1},
    {SYS_vmsplice, SysSize::Iov, 2, -1, SysFlags::Splice, 3, -1, -1, -1},  // made as vmsplice()
};

}  // namespace

TEST_CASE("syscall_table: names and x86_64 numbers as libseccomp knows them", "[syscall_table]") {
  for (const SyscallEntry& e : syscall_table()) {
    INFO(e.name);
    CHECK(seccomp_syscall_resolve_name(e.name) == e.nr);
    CHECK(syscall_entry(e.nr) == &e);
    CHECK(sv_syscall(e.nr) == &e);  // the supervisor reads the same rows
  }
  for (int nr = 0; nr < 1024; ++nr)
    if (const SyscallEntry* e = syscall_entry(nr)) CHECK(e->nr == nr);
}

TEST_CASE("syscall_table: every x86_64 number as the library's syscall() limited it", "[syscall_table]") {
  for (long nr = 0; nr < 1024; ++nr) {
    INFO("x86_64 system call " << nr);
    const SyscallEntry* e = syscall_entry(nr);
    CallId now = e && e->size != SysSize::None ? e->call : CallId::count_;  // as syscall() reads the row
    if (e) CHECK(call_is_data(e->call) == (e->size != SysSize::None));
    CHECK(now == old_library_call(nr));
    CHECK((e && e->marked) == old_marks_first_arg(nr));
  }
}

TEST_CASE("syscall_table: the arguments where the library's syscall() found them", "[syscall_table]") {
  size_t data_rows = 0;
  for (const SyscallEntry& e : syscall_table()) data_rows += call_is_data(e.call);
  CHECK(data_rows == std::size(kOldLibraryArgs));
  for (const LibraryArgs& want : kOldLibraryArgs) {
    const SyscallEntry* e = syscall_entry(want.nr);
    REQUIRE(e);
    INFO(e->name);
    CHECK(e->size == want.size);
    CHECK(e->size_arg == want.size_arg);
    CHECK(e->off_arg == want.off_arg);
    // The library reads no splice flags (zero-copy calls are clamped to a chunk).
    if (want.flags != SysFlags::Splice) {
      CHECK(e->flags == want.flags);
      CHECK(e->flags_arg == want.flags_arg);
    }
    if (want.dest >= 0) {
      CHECK(e->fd_arg == want.dest);
      CHECK(e->src_fd_arg == want.src);
      CHECK(e->src_off_arg == want.src_off);
    } else {
      CHECK(e->fd_arg == 0);
      CHECK(e->src_fd_arg == -1);
    }
  }
}

namespace {

// The 32-bit map as bonsaictl built it before the table (sv_compat.cc, at run time):
// each row's name looked up in libseccomp's i386 numbering, then the socket calls'
// direct numbers (Linux 4.3+; libseccomp names them by socketcall pseudo-numbers) and
// the 64-bit offset and time forms. Kept as the oracle of the table's i386 columns.
std::map<int, int> i386_by_libseccomp() {
  std::map<int, int> m;  // i386 number -> x86_64 number
  for (const SyscallEntry& e : syscall_table()) {
    int n = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, e.name);
    if (n >= 0) m.emplace(n, e.nr);
  }
  for (auto [n32, name64] : {std::pair{362, "connect"}, std::pair{364, "accept4"}, std::pair{369, "sendto"},
                             std::pair{370, "sendmsg"}, std::pair{371, "recvfrom"}, std::pair{372, "recvmsg"},
                             std::pair{337, "recvmmsg"}, std::pair{345, "sendmmsg"}})
    m.emplace(n32, seccomp_syscall_resolve_name(name64));
  for (auto [name32, name64] : {std::pair{"sendfile64", "sendfile"}, std::pair{"recvmmsg_time64", "recvmmsg"}})
    m.emplace(seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, name32), seccomp_syscall_resolve_name(name64));
  return m;
}

}  // namespace

TEST_CASE("syscall_table: every i386 number as libseccomp's numbering maps it", "[syscall_table]") {
  std::map<int, int> want = i386_by_libseccomp();
  const __u64 args[6] = {};
  int tid = static_cast<int>(::syscall(SYS_gettid));
  for (int nr = 0; nr < 1024; ++nr) {
    INFO("i386 system call " << nr);
    const SyscallEntry* e = syscall_entry_i386(nr);
    auto it = want.find(nr);
    REQUIRE((it != want.end()) == (e != nullptr));
    if (!e) continue;
    CHECK(e->nr == it->second);
    CHECK((e->i386_nr == nr || e->i386_nr64 == nr));
    SvCompatCall c;  // the supervisor's 32-bit calls (socketcall aside) come from the same rows
    REQUIRE(sv_compat_call(nr, args, tid, c));
    CHECK(c.sc == e);
  }
  CHECK(sv_compat_nr(SYS_sendfile) == 187);
  CHECK(syscall_entry_i386(239) == syscall_entry(SYS_sendfile));  // sendfile64
  CHECK(syscall_entry_i386(102) == nullptr);                      // socketcall: unpacked, no row
}
