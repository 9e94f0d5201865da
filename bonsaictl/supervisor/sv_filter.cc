// SPDX-License-Identifier: MIT
// The seccomp filter of a supervised tree (see sv_filter.h), built with libseccomp.
#include "supervisor/sv_filter.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "abi/strict_mark.h"
#include "abi/syscall_table.h"
#include "base/diag.h"

namespace bonsai::ctl {
namespace {

// Strict mode's probe: fcntl(kStrictProbeFd, F_GETFD) fails with EBADF anywhere but
// under a strict filter, which answers EDOM (no fcntl ever fails so).
constexpr int kStrictProbeFd = 0x7ffffb05;
constexpr int kStrictProbeErrno = EDOM;

// Strict mode: NOTIFY (or `act`) for `nr` unless the upper half of its first argument is
// the mark: two rules, below the mark and above it (unsigned 64-bit compares).
int rule_add_unmarked(scmp_filter_ctx ctx, uint32_t act, int nr, uint32_t mark) {
  uint64_t lo = static_cast<uint64_t>(mark) << 32, hi = static_cast<uint64_t>(mark + 1) << 32;
  int rc = seccomp_rule_add(ctx, act, nr, 1, SCMP_A0_64(SCMP_CMP_LT, lo));
  if (rc == 0) rc = seccomp_rule_add(ctx, act, nr, 1, SCMP_A0_64(SCMP_CMP_GE, hi));
  return rc;
}

// A rule that never matches (fcntl(kStrictProbeFd, F_GETFL): no descriptor has that
// number): the kernel hands a listener over only for a filter that can notify, and a
// limit set naming no system call (`fwrite=...`, `fread=...`: functions of the library)
// must start like any other.
constexpr int kNeverFd = kStrictProbeFd;

}  // namespace

std::vector<int> sv_filter_numbers(int nr64) {
  std::vector<int> out{nr64};
  const SyscallEntry* row = syscall_entry(nr64);
  if (!row) return out;
  for (int n32 : {int{row->i386_nr}, int{row->i386_nr64}}) {
    if (n32 < 0) continue;
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86, n32);
    if (!name) continue;  // unknown to this libseccomp: the unit test says so
    int nr = seccomp_syscall_resolve_name(name);  // a pseudo number where x86_64 lacks it
    std::free(name);
    if (nr != __NR_SCMP_ERROR && std::find(out.begin(), out.end(), nr) == out.end()) out.push_back(nr);
  }
  return out;
}

// Is CAP_SYS_ADMIN in this process's effective set (a filter without no_new_privs needs it)?
static bool cap_sys_admin() {
  struct {
    uint32_t version;
    int pid;
  } head{0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
  struct {
    uint32_t effective, permitted, inheritable;
  } data[2]{};
  return syscall(SYS_capget, &head, data) == 0 && (data[0].effective & (1u << 21 /* CAP_SYS_ADMIN */));
}

scmp_filter_ctx sv_filter_build(const std::vector<int>& nrs, bool deny_io_uring, uint32_t strict_mark, std::string& why) {
  // API level 5: SCMP_ACT_NOTIFY and the notification calls (libseccomp probes the kernel).
  if (unsigned api = seccomp_api_get(); api < 5)
    return why = fmt::format("this kernel or its container policy does not offer seccomp user notification "
                             "(libseccomp API level {}, 5 needed)", api), nullptr;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) return why = "seccomp_init failed", nullptr;
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW);
  // The 32-bit ABI (32-bit programs, `int $0x80` in 64-bit ones) and x32 get the same
  // rules, translated by name, plus the 32-bit forms with names of their own
  // (sv_filter_numbers): the supervisor charges 32-bit calls (sv_compat.h) and refuses
  // x32 ones (ENOSYS). Other ABIs cannot run on x86_64.
  if (rc == 0) rc = seccomp_arch_add(ctx, SCMP_ARCH_X86);
  if (rc == 0) rc = seccomp_arch_add(ctx, SCMP_ARCH_X32);
  // Root keeps setuid programs working (no no_new_privs needed with CAP_SYS_ADMIN; a
  // container's root lacks it and takes no_new_privs, docs/reference/containers.md).
  if (rc == 0 && geteuid() == 0 && cap_sys_admin()) rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
  // No speculative-store-bypass mitigation forced on the tree: the filter does not
  // sandbox hostile code (docs/reference/supervised.md), and the mitigation slows every program.
  // Both best effort (an older libseccomp or kernel lacks them).
  if (rc == 0 && seccomp_api_get() >= 4) (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_SSB, 1);
  if (rc == 0) (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);  // a binary tree of the numbers
  const uint32_t mark = strict_mark;
  std::vector<int> all;  // each call in every ABI by its own number (sv_filter_numbers)
  for (int nr64 : nrs)
    for (int nr : sv_filter_numbers(nr64))
      if (std::find(all.begin(), all.end(), nr) == all.end()) all.push_back(nr);
  for (int nr : all) {
    if (rc != 0) break;
    if (mark) {  // the hand-over below is marked too
      rc = rule_add_unmarked(ctx, SCMP_ACT_NOTIFY, nr, mark);
    } else if (nr == SCMP_SYS(sendmsg)) {  // all but the hand-over below
      rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 1, SCMP_A0_32(SCMP_CMP_NE, kHandoffFd));
      if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 1, SCMP_A2_32(SCMP_CMP_NE, kHandoffFlags));
    } else {
      rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
    }
  }
  // The 32-bit ABI's socketcall multiplexes send and recv, which have no name of their
  // own in the 64-bit table: every socketcall goes (the supervisor sorts them out).
  bool sockets = false;
  for (int nr : nrs)
    for (int s : {SCMP_SYS(sendto), SCMP_SYS(recvfrom), SCMP_SYS(sendmsg), SCMP_SYS(recvmsg), SCMP_SYS(sendmmsg),
                  SCMP_SYS(recvmmsg), SCMP_SYS(connect), SCMP_SYS(accept), SCMP_SYS(accept4)})
      sockets |= nr == s;
  if (rc == 0 && sockets) rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(socketcall), 0);
  if (rc == 0 && nrs.empty())
    rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(fcntl), 2, SCMP_A0_32(SCMP_CMP_EQ, kNeverFd),
                          SCMP_A1_32(SCMP_CMP_EQ, F_GETFL));
  if (rc == 0 && (deny_io_uring || mark)) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0);
  if (mark) {
    // Kernel AIO: io_submit's iocbs are the library's to charge (its syscall()); a
    // context made by anyone else (a static program) would escape: ENOSYS.
    if (rc == 0) rc = rule_add_unmarked(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_setup), mark);
    if (rc == 0)
      rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(kStrictProbeErrno), SCMP_SYS(fcntl), 2,
                            SCMP_A0_32(SCMP_CMP_EQ, kStrictProbeFd), SCMP_A1_32(SCMP_CMP_EQ, F_GETFD));
  }
  if (rc != 0) {
    why = fmt::format("building the seccomp filter: {}", std::strerror(-rc));
    seccomp_release(ctx);
    return nullptr;
  }
  return ctx;
}

bool sv_inside_strict() noexcept {
  int saved = errno;
  bool in = syscall(SYS_fcntl, kStrictProbeFd, F_GETFD, 0) == -1 && errno == kStrictProbeErrno;
  errno = saved;
  return in;
}

uint32_t sv_strict_mark_new() {
  for (int i = 0; i < 64; ++i) {
    uint32_t m = 0;
    if (getrandom(&m, sizeof m, 0) != sizeof m) runtime_error(fmt::format("getrandom: {}", std::strerror(errno)));
    m |= 0x80000000u;
    if (strict_mark_valid(m)) return m;
  }
  runtime_error("no strict mark could be drawn");
}

}  // namespace bonsai::ctl
