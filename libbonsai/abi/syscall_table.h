// SPDX-License-Identifier: MIT
// The system calls bonsai knows by number (x86_64, and the 32-bit x86 ABI's numbers of
// the same calls): which call name of the limit language each stands for and where its
// descriptor, size, source, offset and flags are among its arguments. One table, read
// by the library's syscall() wrapper (interpose/syscall_call.cc: the data calls made by
// number are limited as the named ones), by strict mode's marked syscall()
// (interpose/strict_calls.cc: which first arguments carry the mark) and by bonsaictl's
// supervisor (bonsaictl/supervisor/sv_syscalls.h: which calls a limit set notifies and how each is
// charged; sv_compat.h: the 32-bit calls in the 64-bit form). A call is added or fixed
// here, once.
// Pure data: constexpr lookups, no allocation, no lock, no relocation (names are
// arrays, not pointers: nothing for the loader to patch at every exec).
#pragma once
#include <sys/syscall.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "abi/calls.h"

namespace bonsai {

// How the supervisor learns what a call moved (it never sees the return value).
enum class SysMoved : uint8_t {
  ReadChar,   // the kernel counts it in the thread's rchar (/proc/PID/task/TID/io)
  WriteChar,  // ... in wchar (sendfile and copy_file_range: in both; wchar is used)
  Asked,      // not counted there (socket message calls, splice, tee, vmsplice): the
              // size asked, cut to what the source holds when that can be seen
  Unit,       // a metadata call: one call, no bytes
};

enum class SysSize : uint8_t {
  None,  // no size (metadata)
  Arg,   // args[size_arg]; the buffer, if any, at args[1]
  Iov,   // an iovec array at args[size_arg - 1] with args[size_arg] entries
  Msg,   // a msghdr at args[size_arg]
  Mmsg,  // an mmsghdr array at args[size_arg - 1], args[size_arg] entries
};

// What the flags argument (args[flags_arg]) holds.
enum class SysFlags : uint8_t {
  None,    // no flags of interest
  Msg,     // MSG_* (MSG_PEEK: a read that takes nothing; MSG_DONTWAIT)
  Rwf,     // RWF_* (RWF_NOWAIT)
  Splice,  // SPLICE_F_* (SPLICE_F_NONBLOCK)
};

// Argument positions are the x86_64 form's (-1: none); a 32-bit call is brought to that
// form first (bonsaictl/supervisor/sv_compat.h).
struct SyscallEntry {
  int nr;             // x86_64 number
  int16_t i386_nr;    // the 32-bit x86 ABI's number of the same call (-1: none of its own)
  int16_t i386_nr64;  // its form with 64-bit offsets or times (sendfile64, recvmmsg_time64), or -1
  char name[16];      // the system call's name (as libseccomp names it)
  CallId call;        // the call name it is charged under
  CallId alt;         // sendto/recvfrom without an address: send/recv (else count_)
  SysMoved moved;
  bool is_write;
  int8_t fd_arg;      // the descriptor charged (destination of zero-copy calls)
  int8_t src_fd_arg;  // zero-copy: the source descriptor
  int8_t src_off_arg; // zero-copy: the source's offset pointer (charged as pread when set)
  int8_t off_arg;     // a file offset passed by value (pread64, preadv...; -1 in it: the file position)
  SysSize size;
  int8_t size_arg;
  SysFlags flags;
  int8_t flags_arg;
  bool marked;        // strict mode: its first argument is a descriptor or an *at call's
                      // directory, which carries the launch's mark (abi/strict_mark.h)
};

namespace syscall_rows {
using C = CallId;
using M = SysMoved;
using Z = SysSize;
using F = SysFlags;
constexpr CallId none = CallId::count_;
constexpr bool R = false, W = true;           // is_write
constexpr bool mark = true, unmarked = false;  // marked

// nr, i386, i386 64-bit form, name, call, alt, moved, write,
//   fd, src fd, src off, off, size, size arg, flags, flags arg, marked
inline constexpr SyscallEntry kTable[] = {
    {SYS_read, 3, -1, "read", C::read, none, M::ReadChar, R, 0, -1, -1, -1, Z::Arg, 2, F::None, -1, mark},
    {SYS_pread64, 180, -1, "pread64", C::pread, none, M::ReadChar, R, 0, -1, -1, 3, Z::Arg, 2, F::None, -1, mark},
    {SYS_readv, 145, -1, "readv", C::readv, none, M::ReadChar, R, 0, -1, -1, -1, Z::Iov, 2, F::None, -1, mark},
    {SYS_preadv, 333, -1, "preadv", C::preadv, none, M::ReadChar, R, 0, -1, -1, 3, Z::Iov, 2, F::None, -1, mark},
    {SYS_preadv2, 378, -1, "preadv2", C::preadv, none, M::ReadChar, R, 0, -1, -1, 3, Z::Iov, 2, F::Rwf, 5, mark},
    {SYS_recvfrom, 371, -1, "recvfrom", C::recvfrom, C::recv, M::Asked, R, 0, -1, -1, -1, Z::Arg, 2, F::Msg, 3, mark},
    {SYS_recvmsg, 372, -1, "recvmsg", C::recvmsg, none, M::Asked, R, 0, -1, -1, -1, Z::Msg, 1, F::Msg, 2, mark},
    {SYS_recvmmsg, 337, 417, "recvmmsg", C::recvmmsg, none, M::Asked, R, 0, -1, -1, -1, Z::Mmsg, 2, F::Msg, 3, mark},
    {SYS_write, 4, -1, "write", C::write, none, M::WriteChar, W, 0, -1, -1, -1, Z::Arg, 2, F::None, -1, mark},
    {SYS_pwrite64, 181, -1, "pwrite64", C::pwrite, none, M::WriteChar, W, 0, -1, -1, 3, Z::Arg, 2, F::None, -1, mark},
    {SYS_writev, 146, -1, "writev", C::writev, none, M::WriteChar, W, 0, -1, -1, -1, Z::Iov, 2, F::None, -1, mark},
    {SYS_pwritev, 334, -1, "pwritev", C::pwritev, none, M::WriteChar, W, 0, -1, -1, 3, Z::Iov, 2, F::None, -1, mark},
    {SYS_pwritev2, 379, -1, "pwritev2", C::pwritev, none, M::WriteChar, W, 0, -1, -1, 3, Z::Iov, 2, F::Rwf, 5, mark},
    {SYS_sendto, 369, -1, "sendto", C::sendto, C::send, M::Asked, W, 0, -1, -1, -1, Z::Arg, 2, F::Msg, 3, mark},
    {SYS_sendmsg, 370, -1, "sendmsg", C::sendmsg, none, M::Asked, W, 0, -1, -1, -1, Z::Msg, 1, F::Msg, 2, mark},
    {SYS_sendmmsg, 345, -1, "sendmmsg", C::sendmmsg, none, M::Asked, W, 0, -1, -1, -1, Z::Mmsg, 2, F::Msg, 3, mark},
    // sendfile(out, in, offset*, count): rchar and wchar both grow by what moved.
    {SYS_sendfile, 187, 239, "sendfile", C::sendfile, none, M::WriteChar, W, 0, 1, 2, -1, Z::Arg, 3, F::None, -1, mark},
    // splice(in, off_in*, out, off_out*, len, flags)
    {SYS_splice, 313, -1, "splice", C::splice, none, M::Asked, W, 2, 0, 1, -1, Z::Arg, 4, F::Splice, 5, mark},
    // tee(in, out, len, flags): the source is not consumed, but its bytes are read
    {SYS_tee, 315, -1, "tee", C::tee, none, M::Asked, W, 1, 0, -1, -1, Z::Arg, 2, F::Splice, 3, mark},
    {SYS_vmsplice, 316, -1, "vmsplice", C::vmsplice, none, M::Asked, W, 0, -1, -1, -1, Z::Iov, 2, F::Splice, 3, mark},
    // copy_file_range(in, off_in*, out, off_out*, len, flags)
    {SYS_copy_file_range, 377, -1, "copy_file_range", C::copy_file_range, none, M::WriteChar, W, 2, 0, 1, -1, Z::Arg,
     4, F::None, -1, mark},
    {SYS_open, 5, -1, "open", C::open, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, unmarked},
    {SYS_openat, 295, -1, "openat", C::openat, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_openat2, 437, -1, "openat2", C::openat, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_creat, 8, -1, "creat", C::creat, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, unmarked},
    {SYS_close, 6, -1, "close", C::close, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_connect, 362, -1, "connect", C::connect, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    // accept: the 32-bit ABI has it through socketcall only
    {SYS_accept, -1, -1, "accept", C::accept, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_accept4, 364, -1, "accept4", C::accept4, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_fsync, 118, -1, "fsync", C::fsync, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_fdatasync, 148, -1, "fdatasync", C::fdatasync, none, M::Unit, R, 0, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_unlink, 10, -1, "unlink", C::unlink, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, unmarked},
    {SYS_unlinkat, 301, -1, "unlinkat", C::unlinkat, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_rename, 38, -1, "rename", C::rename, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, unmarked},
    {SYS_renameat, 302, -1, "renameat", C::rename, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_renameat2, 353, -1, "renameat2", C::rename, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
    {SYS_mkdir, 39, -1, "mkdir", C::mkdir, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, unmarked},
    {SYS_mkdirat, 296, -1, "mkdirat", C::mkdir, none, M::Unit, R, -1, -1, -1, -1, Z::None, 0, F::None, -1, mark},
};

inline constexpr size_t kCount = sizeof kTable / sizeof kTable[0];
inline constexpr size_t kNrLimit = 512;  // every number of either ABI in the table is below
inline constexpr uint8_t kNoRow = 0xff;
static_assert(kCount < kNoRow);

// Each number of one ABI (both of its columns for i386) in one row at most, all below kNrLimit.
constexpr bool numbers_fit(bool i386) {
  std::array<bool, kNrLimit> seen{};
  for (const SyscallEntry& e : kTable) {
    for (int nr : {i386 ? int{e.i386_nr} : e.nr, i386 ? int{e.i386_nr64} : -1}) {
      if (nr < 0) continue;
      if (static_cast<size_t>(nr) >= kNrLimit || seen[static_cast<size_t>(nr)]) return false;
      seen[static_cast<size_t>(nr)] = true;
    }
  }
  return true;
}
static_assert(numbers_fit(false) && numbers_fit(true), "a number is twice in the table, or not below kNrLimit");

// The positions its readers index arguments with (the library's syscall() takes them
// as they are): in range, a descriptor for every data call, a flags position for flags.
constexpr bool rows_sane() {
  auto arg = [](int i) { return i >= -1 && i < 6; };
  for (const SyscallEntry& e : kTable) {
    if (!arg(e.fd_arg) || !arg(e.src_fd_arg) || !arg(e.src_off_arg) || !arg(e.off_arg) || !arg(e.size_arg) ||
        !arg(e.flags_arg))
      return false;
    if ((e.size == SysSize::None) != (e.moved == SysMoved::Unit)) return false;  // metadata: no size
    if (e.size != SysSize::None && (e.fd_arg < 0 || e.size_arg < 0)) return false;
    if ((e.size == SysSize::Iov || e.size == SysSize::Mmsg) && e.size_arg < 1) return false;
    if (e.src_fd_arg >= 0 && e.size != SysSize::Arg) return false;
    if ((e.flags != SysFlags::None) != (e.flags_arg >= 0)) return false;
  }
  return true;
}
static_assert(rows_sane(), "an argument position out of range or missing");

// number -> row, for one ABI.
constexpr std::array<uint8_t, kNrLimit> index_of(bool i386) {
  std::array<uint8_t, kNrLimit> idx{};
  for (auto& i : idx) i = kNoRow;
  for (size_t r = 0; r < kCount; ++r) {
    for (int nr : {i386 ? int{kTable[r].i386_nr} : kTable[r].nr, i386 ? int{kTable[r].i386_nr64} : -1})
      if (nr >= 0) idx[static_cast<size_t>(nr)] = static_cast<uint8_t>(r);
  }
  return idx;
}
inline constexpr std::array<uint8_t, kNrLimit> kIndex64 = index_of(false);
inline constexpr std::array<uint8_t, kNrLimit> kIndexI386 = index_of(true);

constexpr const SyscallEntry* lookup(const std::array<uint8_t, kNrLimit>& idx, long nr) noexcept {
  if (nr < 0 || static_cast<unsigned long>(nr) >= kNrLimit) return nullptr;
  uint8_t r = idx[static_cast<size_t>(nr)];
  return r == kNoRow ? nullptr : &kTable[r];
}
}  // namespace syscall_rows

// Every system call of the table.
constexpr std::span<const SyscallEntry> syscall_table() noexcept { return syscall_rows::kTable; }

// @return the row of x86_64 system call `nr`, or nullptr if bonsai does not know it.
constexpr const SyscallEntry* syscall_entry(long nr) noexcept {
  return syscall_rows::lookup(syscall_rows::kIndex64, nr);
}

// @return the row of 32-bit x86 system call `nr` (either of its numbers), or nullptr.
// socketcall's multiplexed calls are not here (bonsaictl/supervisor/sv_compat.cc unpacks them).
constexpr const SyscallEntry* syscall_entry_i386(long nr) noexcept {
  return syscall_rows::lookup(syscall_rows::kIndexI386, nr);
}

}  // namespace bonsai
