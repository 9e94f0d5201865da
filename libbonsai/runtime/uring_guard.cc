// SPDX-License-Identifier: MIT
// BONSAI_IO_URING=deny: a seccomp filter that answers io_uring_setup with ENOSYS
// (see uring_guard.h). Set-up only: libseccomp allocates. libseccomp is opened with
// dlopen when a filter is to be installed, never linked: every process would map it
// at start for a guard that is opt-in (start-up cost). dlopen and dlsym are
// looked up too (sys/late_bound.h): glibc before 2.34 has them in libdl.
#include "runtime/uring_guard.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <linux/capability.h>
#include <seccomp.h>
#include <sys/syscall.h>

#include "log/blog.h"
#include "runtime/options.h"
#include "sys/late_bound.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

namespace bonsai {
namespace {

// io_uring_setup(0, NULL) creates nothing: the kernel answers EFAULT/EINVAL (or EPERM
// under kernel.io_uring_disabled), and ENOSYS only when it is already denied -- by
// the filter a parent installed (inherited across exec) or by a kernel built
// without io_uring. Then a second filter would only lengthen every system call.
bool uring_already_denied() noexcept {
  return raw_syscall3(__NR_io_uring_setup, 0, 0, 0) == -ENOSYS;
}

// CAP_SYS_ADMIN in the effective set: the kernel accepts a filter without
// no_new_privs, so setuid programs started later keep working.
bool have_sys_admin() noexcept {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (raw_syscall3(SYS_capget, reinterpret_cast<long>(&hdr), reinterpret_cast<long>(data), 0) != 0) return false;
  return data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

// libseccomp's functions the filter uses, from the shared library (LGPL: not linked
// statically), loaded on the first install; its types and constants from <seccomp.h>.
struct Seccomp {
  decltype(&::seccomp_init) init;
  decltype(&::seccomp_attr_set) attr_set;
  decltype(&::seccomp_arch_add) arch_add;
  decltype(&::seccomp_rule_add) rule_add;
  decltype(&::seccomp_load) load;
  decltype(&::seccomp_release) release;
};

// @return true with every pointer set, or false (`*why`: dlerror's text).
[[maybe_unused]] constinit LateSlot g_dlopen{0}, g_dlsym{0}, g_dlerror{0};

bool seccomp_open(Seccomp& s, const char** why) noexcept {
#if BONSAI_SANITIZED
  auto dl_open = &::dlopen;
  auto dl_sym = &::dlsym;
  auto dl_error = &::dlerror;
#else
  auto dl_open = late_fn<decltype(&::dlopen)>(g_dlopen, "dlopen");
  auto dl_sym = late_fn<decltype(&::dlsym)>(g_dlsym, "dlsym");
  auto dl_error = late_fn<decltype(&::dlerror)>(g_dlerror, "dlerror");
#endif
  if (!dl_open || !dl_sym || !dl_error) {
    *why = "this libc has no dlopen here (glibc before 2.34 keeps it in libdl, which the program did not load)";
    return false;
  }
  void* h = dl_open("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL);  // never closed: once per process at most
  if (!h) {
    *why = dl_error();
    return false;
  }
  s.init = reinterpret_cast<decltype(s.init)>(dl_sym(h, "seccomp_init"));
  s.attr_set = reinterpret_cast<decltype(s.attr_set)>(dl_sym(h, "seccomp_attr_set"));
  s.arch_add = reinterpret_cast<decltype(s.arch_add)>(dl_sym(h, "seccomp_arch_add"));
  s.rule_add = reinterpret_cast<decltype(s.rule_add)>(dl_sym(h, "seccomp_rule_add"));
  s.load = reinterpret_cast<decltype(s.load)>(dl_sym(h, "seccomp_load"));
  s.release = reinterpret_cast<decltype(s.release)>(dl_sym(h, "seccomp_release"));
  if (s.init && s.attr_set && s.arch_add && s.rule_add && s.load && s.release) return true;
  *why = "a function is missing";
  return false;
}

// @return 0, or the negative errno of the step that failed (`*step` names it).
int install(const Seccomp& sc, bool nnp, const char** step) noexcept {
  scmp_filter_ctx ctx = sc.init(SCMP_ACT_ALLOW);
  if (!ctx) {
    *step = "seccomp_init";
    return -ENOMEM;
  }
  int rc = 0;
  // Another ABI's system calls (a 32-bit child exec'd from here, int 0x80) must not
  // be killed by the filter (libseccomp's default for a foreign architecture): the
  // x86 ones get the same rule, anything else is allowed.
  if ((rc = sc.attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW)) != 0) *step = "the architecture action";
#if defined(__x86_64__)
  if (rc == 0) {
    sc.arch_add(ctx, SCMP_ARCH_X86);  // best effort: the x86_64 rule is what matters
    sc.arch_add(ctx, SCMP_ARCH_X32);
  }
#endif
  if (rc == 0 && (rc = sc.attr_set(ctx, SCMP_FLTATR_CTL_NNP, nnp ? 1 : 0)) != 0) *step = "no_new_privs";
  // Every thread, should set-up run after the program started some (best effort: a
  // kernel without thread sync still filters this thread and all it creates).
  if (rc == 0) sc.attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc == 0) sc.attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);  // the kernel's errno in the message
  if (rc == 0 && (rc = sc.rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0)) != 0)
    *step = "the io_uring_setup rule";
  if (rc == 0 && (rc = sc.load(ctx)) != 0) *step = "loading the filter";
  sc.release(ctx);
  return rc > 0 ? -ECANCELED : rc;  // TSYNC: a positive thread id that could not sync
}

}  // namespace

UringPolicy uring_policy_parse(const char* value, bool* bad) noexcept {
  *bad = false;
  if (!value || !*value || std::strcmp(value, "allow") == 0) return UringPolicy::Allow;
  if (std::strcmp(value, "deny") == 0) return UringPolicy::Deny;
  *bad = true;
  return UringPolicy::Allow;
}

BONSAI_STARTUP bool uring_guard_from_env() noexcept {
  const char* value = option_env(Opt::io_uring);
  bool bad = false;
  if (uring_policy_parse(value, &bad) == UringPolicy::Allow) {
    if (bad) blog(LogLevel::Warn, "BONSAI_IO_URING='%s' is neither deny nor allow; io_uring stays allowed", value);
    return false;
  }
  int saved_errno = errno;
  bool denied = uring_already_denied();
  if (!denied) {
    bool nnp = !have_sys_admin();
    const char* step = "?";
    Seccomp sc{};
    const char* why = nullptr;
    bool loaded = seccomp_open(sc, &why);
    int rc = loaded ? install(sc, nnp, &step) : -1;
    if (!loaded) {
      blog(LogLevel::Warn, "BONSAI_IO_URING=deny: cannot load libseccomp.so.2 (%s); io_uring stays allowed, and its "
           "I/O is NOT limited", why ? why : "?");
    } else if (rc == 0) {
      denied = true;
      blog(LogLevel::Info, "BONSAI_IO_URING=deny: io_uring_setup fails with ENOSYS in this process and its children%s",
           nnp ? " (no_new_privs set: programs executed from here gain no privileges)" : "");
    } else {
      blog(LogLevel::Warn, "BONSAI_IO_URING=deny: cannot install the seccomp filter (%s: %s); io_uring stays allowed, "
           "and its I/O is NOT limited", step, std::strerror(-rc));
    }
  }
  errno = saved_errno;
  return denied;
}

}  // namespace bonsai
