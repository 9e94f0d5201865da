// SPDX-License-Identifier: MIT
// The io_uring default of `run` (see uring_deny.h): the filter, through libseccomp.
#include "launch/uring_deny.h"

#include <cerrno>
#include <cstring>
#include <fmt/core.h>
#include <seccomp.h>

#include "abi/calls.h"

namespace bonsai::ctl {

bool limits_have_data(const LimitSet& limits) {
  for (uint32_t i = 0; i < limits.count && i < kMaxRules; ++i)
    for (size_t c = 0; c < kCallCount; ++c)
      if ((limits.rules[i].calls & call_bit(static_cast<CallId>(c))) && call_is_data(static_cast<CallId>(c)))
        return true;
  return false;
}

bool uring_deny_here(std::string& why) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return why = "seccomp_init failed", false;
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
  if (rc == 0) {
    seccomp_arch_add(ctx, SCMP_ARCH_X86);  // best effort, as the library's guard
    seccomp_arch_add(ctx, SCMP_ARCH_X32);
    rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  }
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0);
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) why = fmt::format("the seccomp filter: {}", std::strerror(-rc));
  return rc == 0;
}

}  // namespace bonsai::ctl
