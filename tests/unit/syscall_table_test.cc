// SPDX-License-Identifier: MIT
// abi/syscall_table.h, the one table of system calls by number, against the tables it
// replaces: the supervisor's (bonsaictl/sv_syscalls.cc), its 32-bit map built from
// libseccomp's names (bonsaictl/sv_compat.cc), the library's syscall() switch
// (interpose/syscall_call.cc) and strict mode's marked numbers (interpose/strict_calls.cc),
// over every number 0..1023.
#include <catch2/catch.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "../../bonsaictl/sv_compat.h"
#include "../../bonsaictl/sv_syscalls.h"
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

TEST_CASE("syscall_table: every x86_64 number as the supervisor's table had it", "[syscall_table]") {
  for (int nr = 0; nr < 1024; ++nr) {
    INFO("x86_64 system call " << nr);
    const SvSyscall* old = sv_syscall(nr);
    const SyscallEntry* e = syscall_entry(nr);
    REQUIRE((old == nullptr) == (e == nullptr));
    if (!e) continue;
    CHECK(e->nr == old->nr);
    CHECK(std::strcmp(e->name, old->name) == 0);
    CHECK(e->call == old->call);
    CHECK(e->alt == old->alt);
    CHECK(e->fd_arg == old->fd_arg);
    CHECK(e->src_fd_arg == old->src_fd_arg);
    CHECK(e->src_off_arg == old->src_off_arg);
    CHECK(static_cast<int>(e->size) == static_cast<int>(old->size));
    CHECK(e->size_arg == old->size_arg);
    CHECK(static_cast<int>(e->moved) == static_cast<int>(old->moved));
    CHECK(e->is_write == old->is_write);
  }
  CHECK(syscall_table().size() == sv_syscalls().size());
}

TEST_CASE("syscall_table: every x86_64 number as the library's syscall() limited it", "[syscall_table]") {
  for (long nr = 0; nr < 1024; ++nr) {
    INFO("x86_64 system call " << nr);
    const SyscallEntry* e = syscall_entry(nr);
    CallId now = e && call_is_data(e->call) ? e->call : CallId::count_;
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

TEST_CASE("syscall_table: every i386 number as the supervisor's 32-bit map had it", "[syscall_table]") {
  const __u64 args[6] = {};
  int tid = static_cast<int>(::syscall(SYS_gettid));
  for (int nr = 0; nr < 1024; ++nr) {
    if (nr == 102) continue;  // socketcall: unpacked, no row
    INFO("i386 system call " << nr);
    SvCompatCall c;
    bool old = sv_compat_call(nr, args, tid, c);
    const SyscallEntry* e = syscall_entry_i386(nr);
    REQUIRE(old == (e != nullptr));
    if (e) CHECK(e->nr == c.sc->nr);
  }
  // sv_compat_nr gave one of a call's two numbers, as its hash map happened to be ordered
  // (sendfile: 239, sendfile64).
  for (const SyscallEntry& e : syscall_table()) {
    INFO(e.name);
    int old = sv_compat_nr(e.nr);
    CHECK((old == e.i386_nr || (old >= 0 && old == e.i386_nr64)));
  }
}
