// SPDX-License-Identifier: MIT
// The table of supervised system calls (see sv_syscalls.h).
#include "supervisor/sv_syscalls.h"

#include <sys/syscall.h>

namespace bonsai::ctl {
namespace {

constexpr CallId kNone = CallId::count_;
using M = SvMoved;
using Z = SvSize;

// nr, name, call, alt, fd, src fd, src offset, size kind, size arg, moved, write
const std::vector<SvSyscall> kTable = {
    {SYS_read, "read", CallId::read, kNone, 0, -1, -1, Z::Arg, 2, M::ReadChar, false},
    {SYS_pread64, "pread64", CallId::pread, kNone, 0, -1, -1, Z::Arg, 2, M::ReadChar, false},
    {SYS_readv, "readv", CallId::readv, kNone, 0, -1, -1, Z::Iov, 2, M::ReadChar, false},
    {SYS_preadv, "preadv", CallId::preadv, kNone, 0, -1, -1, Z::Iov, 2, M::ReadChar, false},
    {SYS_preadv2, "preadv2", CallId::preadv, kNone, 0, -1, -1, Z::Iov, 2, M::ReadChar, false},
    {SYS_recvfrom, "recvfrom", CallId::recvfrom, CallId::recv, 0, -1, -1, Z::Arg, 2, M::Asked, false},
    {SYS_recvmsg, "recvmsg", CallId::recvmsg, kNone, 0, -1, -1, Z::Msg, 1, M::Asked, false},
    {SYS_recvmmsg, "recvmmsg", CallId::recvmmsg, kNone, 0, -1, -1, Z::Mmsg, 2, M::Asked, false},
    {SYS_write, "write", CallId::write, kNone, 0, -1, -1, Z::Arg, 2, M::WriteChar, true},
    {SYS_pwrite64, "pwrite64", CallId::pwrite, kNone, 0, -1, -1, Z::Arg, 2, M::WriteChar, true},
    {SYS_writev, "writev", CallId::writev, kNone, 0, -1, -1, Z::Iov, 2, M::WriteChar, true},
    {SYS_pwritev, "pwritev", CallId::pwritev, kNone, 0, -1, -1, Z::Iov, 2, M::WriteChar, true},
    {SYS_pwritev2, "pwritev2", CallId::pwritev, kNone, 0, -1, -1, Z::Iov, 2, M::WriteChar, true},
    {SYS_sendto, "sendto", CallId::sendto, CallId::send, 0, -1, -1, Z::Arg, 2, M::Asked, true},
    {SYS_sendmsg, "sendmsg", CallId::sendmsg, kNone, 0, -1, -1, Z::Msg, 1, M::Asked, true},
    {SYS_sendmmsg, "sendmmsg", CallId::sendmmsg, kNone, 0, -1, -1, Z::Mmsg, 2, M::Asked, true},
    // sendfile(out, in, offset*, count): rchar and wchar both grow by what moved.
    {SYS_sendfile, "sendfile", CallId::sendfile, kNone, 0, 1, 2, Z::Arg, 3, M::WriteChar, true},
    // splice(in, off_in*, out, off_out*, len, flags)
    {SYS_splice, "splice", CallId::splice, kNone, 2, 0, 1, Z::Arg, 4, M::Asked, true},
    // tee(in, out, len, flags): the source is not consumed, but its bytes are read
    {SYS_tee, "tee", CallId::tee, kNone, 1, 0, -1, Z::Arg, 2, M::Asked, true},
    {SYS_vmsplice, "vmsplice", CallId::vmsplice, kNone, 0, -1, -1, Z::Iov, 2, M::Asked, true},
    // copy_file_range(in, off_in*, out, off_out*, len, flags)
    {SYS_copy_file_range, "copy_file_range", CallId::copy_file_range, kNone, 2, 0, 1, Z::Arg, 4, M::WriteChar, true},
    {SYS_open, "open", CallId::open, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_openat, "openat", CallId::openat, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_openat2, "openat2", CallId::openat, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_creat, "creat", CallId::creat, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_close, "close", CallId::close, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_connect, "connect", CallId::connect, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_accept, "accept", CallId::accept, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_accept4, "accept4", CallId::accept4, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_fsync, "fsync", CallId::fsync, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_fdatasync, "fdatasync", CallId::fdatasync, kNone, 0, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_unlink, "unlink", CallId::unlink, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_unlinkat, "unlinkat", CallId::unlinkat, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_rename, "rename", CallId::rename, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_renameat, "renameat", CallId::rename, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_renameat2, "renameat2", CallId::rename, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_mkdir, "mkdir", CallId::mkdir, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
    {SYS_mkdirat, "mkdirat", CallId::mkdir, kNone, -1, -1, -1, Z::None, 0, M::Unit, false},
};

bool has_rule(const BucketTable& t, CallMask calls) {
  for (size_t c = 0; c < kCallCount; ++c) {
    if (!(calls & call_bit(static_cast<CallId>(c)))) continue;
    for (size_t k = 0; k < kFdKindCount; ++k)
      if (t.bucket_of[c][k] != kNoBucket) return true;
  }
  return false;
}

}  // namespace

const std::vector<SvSyscall>& sv_syscalls() { return kTable; }

const SvSyscall* sv_syscall(int nr) noexcept {
  for (const auto& s : kTable)
    if (s.nr == nr) return &s;
  return nullptr;
}

CallMask sv_call_candidates(const SvSyscall& s) noexcept {
  CallMask m = call_bit(s.call);
  if (s.alt != kNone) m |= call_bit(s.alt);
  if (s.src_fd_arg >= 0) m |= call_bit(CallId::read) | call_bit(CallId::pread);
  return m;
}

std::vector<int> sv_notified_syscalls(const LimitSet& set) {
  BucketTable table{};
  std::vector<int> out;
  if (!bucket_table_build(set, table, nullptr)) return out;
  for (const auto& s : kTable)
    if (has_rule(table, sv_call_candidates(s))) out.push_back(s.nr);
  return out;
}

}  // namespace bonsai::ctl
