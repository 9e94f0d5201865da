// SPDX-License-Identifier: MIT
// Which supervised system calls a limit set notifies (see sv_syscalls.h; the table is
// abi/syscall_table.h).
#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {
namespace {

bool has_rule(const BucketTable& t, CallMask calls) {
  for (size_t c = 0; c < kCallCount; ++c) {
    if (!(calls & call_bit(static_cast<CallId>(c)))) continue;
    for (size_t k = 0; k < kFdKindCount; ++k)
      if (t.bucket_of[c][k] != kNoBucket) return true;
  }
  return false;
}

}  // namespace

CallMask sv_call_candidates(const SvSyscall& s) noexcept {
  CallMask m = call_bit(s.call);
  if (s.alt != CallId::count_) m |= call_bit(s.alt);
  if (s.src_fd_arg >= 0) m |= call_bit(CallId::read) | call_bit(CallId::pread);
  return m;
}

std::vector<int> sv_notified_syscalls(const LimitSet& set, CallMask protect) {
  BucketTable table{};
  std::vector<int> out;
  bool rules = bucket_table_build(set, table, nullptr);
  protect &= kSvTimedCalls;
  for (const SvSyscall& s : sv_syscalls())
    if ((rules && has_rule(table, sv_call_candidates(s))) || (s.src_fd_arg < 0 && (protect & call_bit(s.call))))
      out.push_back(s.nr);
  return out;
}

}  // namespace bonsai::ctl
