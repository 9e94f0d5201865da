// SPDX-License-Identifier: MIT
// The exec of a static or Go program turned into an exec of bonsaictl's supervising
// trampoline (see exec_supervise.h). Raw system calls and the caller's stack only.
#include "runtime/exec_supervise.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#include "log/blog.h"
#include "runtime/exec_env.h"
#include "runtime/exec_kind.h"
#include "sys/raw_syscall.h"

namespace bonsai {
namespace {

char kLeave[] = "BONSAI_LEAVE=1";
char kSvExec[] = "sv-exec";
char kForeignLibc[] = "--libc";
char kDashes[] = "--";

bool leaves(char* const* envp) {
  for (size_t i = 0; envp && envp[i]; ++i)
    if (std::strncmp(envp[i], "BONSAI_LEAVE=", 13) == 0) return exec_env_leaving(envp[i] + 13);
  return false;
}

size_t count(char* const* v) {
  size_t n = 0;
  while (v && v[n]) ++n;
  return n;
}

}  // namespace

const char* exec_supervise_path_env() noexcept {
  for (size_t i = 0; environ && environ[i]; ++i)
    if (std::strncmp(environ[i], "PATH=", 5) == 0) return environ[i] + 5;
  return nullptr;
}

// Under run --strict (BONSAI_STRICT handed down) the strict supervisor holds such programs already.
bool exec_supervise_wanted() noexcept {
  return exec_env_kept("BONSAI_SERVICE=") != nullptr && exec_env_kept("BONSAI_STRICT=") == nullptr;
}

bool exec_supervise_plan(const char* path, char* const* argv, char* const* envp, char** stack, size_t stack_slots,
                         SvRedirect& out) noexcept {
  out = SvRedirect{nullptr, nullptr, nullptr, nullptr, 0};
  if (!path || !exec_supervise_wanted()) return false;
  ProgramLoader loader;
  ExecKind kind = exec_kind_of(path, &loader);
  bool foreign = kind == ExecKind::Dynamic && loader.libc == ProgramLibc::Foreign;
  if (kind == ExecKind::Setuid) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "%s is setuid or setgid: it is left alone, and its I/O is NOT limited (the "
                    "loader ignores LD_PRELOAD for it, and supervision would take its privileges away)", path);
    return false;
  }
  if (kind != ExecKind::Static && kind != ExecKind::Go && !foreign) return false;
  if (leaves(envp)) return false;
  const char* ctl = exec_env_kept("BONSAI_CTL=");
  if ((!ctl || !*ctl) && foreign) {  // the loader says it cannot load the library (glibc's does, in one line)
    BONSAI_LOG_ONCE(LogLevel::Info, "%s's loader %s takes no build of libbonsai.so: its I/O is NOT limited", path,
                    loader.interp);
    return false;
  }
  if (!ctl || !*ctl) {
    BONSAI_LOG_ONCE(LogLevel::Warn, "%s is %s: LD_PRELOAD cannot reach it and no supervisor can be started "
                    "(BONSAI_CTL is not set: the service was not started by bonsaictl run), so its I/O is NOT limited",
                    path, kind == ExecKind::Go ? "a Go program" : "statically linked");
    return false;
  }
  int saved = errno;
  size_t na = count(argv), ne = count(envp);
  size_t slots = (na + 6) + (ne + 2);
  char** mem = stack;
  if (slots > stack_slots) {
    void* p = mmap(nullptr, slots * sizeof(char*), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = saved;
    if (p == MAP_FAILED) {
      BONSAI_LOG_ONCE(LogLevel::Warn, "no memory to start %s under supervision: it runs as asked, NOT limited", path);
      return false;
    }
    out.mapped = p;
    out.mapped_len = slots * sizeof(char*);
    mem = static_cast<char**>(p);
  }
  char** a = mem;
  size_t o = 0;
  a[o++] = const_cast<char*>(ctl);
  a[o++] = kSvExec;
  if (foreign) a[o++] = kForeignLibc;
  a[o++] = kDashes;
  a[o++] = const_cast<char*>(path);
  for (size_t i = 0; i < na; ++i) a[o++] = argv[i];
  a[o++] = nullptr;
  // BONSAI_LEAVE=1 first and alone: a library active in the trampoline would find the
  // program static again and redirect its exec to the trampoline again, forever.
  char** e = a + o;
  size_t k = 0;
  e[k++] = kLeave;
  for (size_t i = 0; i < ne; ++i)
    if (std::strncmp(envp[i], "BONSAI_LEAVE=", 13) != 0) e[k++] = envp[i];
  e[k] = nullptr;
  out.path = ctl;
  out.argv = a;
  out.envp = e;
  return true;
}

void exec_supervise_failed(const SvRedirect& r, const char* path, int err) noexcept {
  BONSAI_LOG_ONCE(LogLevel::Warn, "cannot start the supervisor %s for %s (errno %d): it runs unsupervised, NOT "
                  "limited", r.path, path, err);
  if (r.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(r.mapped), static_cast<long>(r.mapped_len), 0);
  errno = err;
}

}  // namespace bonsai
