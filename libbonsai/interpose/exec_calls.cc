// SPDX-License-Identifier: MIT
// The exec family and posix_spawn: a program executed by a service process stays in
// the service even when it is given a scrubbed or rebuilt environment (env -i,
// subprocess(env=...), posix_spawn(..., {})). When the new environment lacks the
// library in LD_PRELOAD, the BONSAI_* settings this process started with, or the
// segment descriptor, they are added (runtime/exec_env.h); a child given another
// BONSAI_SERVICE keeps it, and BONSAI_LEAVE=1 is the deliberate way out.
// Async-signal-safe, allocation-free (the array lives on the stack, or in memory
// mapped for it when large): these run after vfork() and in forked children of
// threaded processes. An environment that already carries everything costs one
// scan and one fstat/fcntl pair before the real call.
// In a service process, a static or Go program (runtime/exec_kind.h: its ELF headers,
// read only when the process is in a service) is executed through bonsaictl's
// supervising trampoline instead (runtime/exec_supervise.h); if that exec
// fails, the program is executed as asked. fexecve and execveat are not redirected.
// close_range() and closefrom() skip the kept segment descriptor, so a child that
// closes every descriptor and then changes uid still finds the service.
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdarg>
#include <fcntl.h>
#include <linux/close_range.h>
#include <spawn.h>
#include <sys/mman.h>
#include <unistd.h>

#include "interpose/real.h"
#include "log/blog.h"
#include "runtime/exec_env.h"
#include "runtime/exec_kind.h"
#include "runtime/exec_supervise.h"
#include "shm/shm_fd.h"
#include "sys/raw_syscall.h"

using namespace bonsai;

namespace {

constexpr size_t kEnvBuf = 4096;  // on the stack; larger environments get a mapping
constexpr size_t kArgStack = 256;  // execl* arguments gathered on the stack up to this

// Spawns in flight: the segment descriptor is inheritable while any runs.
constinit std::atomic<int> g_spawning{0};

template <typename Call>
int with_plan(char* const* envp, Call&& call) {
  alignas(char*) char buf[kEnvBuf];
  ExecPlan plan = exec_plan(envp, buf, sizeof buf);
  exec_plan_arm(plan);
  int r = call(plan.envp);
  exec_plan_undo(plan);
  return r;
}

int spawn_with_plan(char* const* envp, auto&& call) {
  alignas(char*) char buf[kEnvBuf];
  ExecPlan plan = exec_plan(envp, buf, sizeof buf);
  // The descriptor is shared by the threads: close-on-exec again only when the last
  // spawn in flight ends.
  bool shared = plan.fd >= 0 && !plan.fd_opened;
  if (shared) {
    g_spawning.fetch_add(1, std::memory_order_acq_rel);
    exec_plan_arm(plan);
  } else {
    exec_plan_arm(plan);
  }
  int r = call(plan.envp);  // posix_spawn returns an error number, errno untouched
  if (shared) {
    ExecPlan keep = plan;
    if (g_spawning.fetch_sub(1, std::memory_order_acq_rel) != 1) keep.fd = -1;
    exec_plan_undo(keep);
  } else {
    exec_plan_undo(plan);
  }
  return r;
}

// Gathers execl-style arguments (arg0, ..., NULL) into an array: on the stack up to
// kArgStack, else in a mapping. @return the array, or nullptr (E2BIG/ENOMEM set).
char** gather_args(const char* arg0, va_list ap, char** stack, void*& mapped, size_t& mapped_len,
                   char* const** envp_out) {
  va_list count_ap;
  va_copy(count_ap, ap);
  size_t n = 1;
  if (arg0)
    while (va_arg(count_ap, char*)) ++n;
  va_end(count_ap);
  char** argv = stack;
  mapped = nullptr;
  if (n + 1 > kArgStack) {
    mapped_len = (n + 1) * sizeof(char*);
    void* p = mmap(nullptr, mapped_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      errno = ENOMEM;
      return nullptr;
    }
    mapped = p;
    argv = static_cast<char**>(p);
  }
  argv[0] = const_cast<char*>(arg0);
  for (size_t i = 1; i < n; ++i) argv[i] = va_arg(ap, char*);
  argv[n] = nullptr;
  if (arg0) (void)va_arg(ap, char*);  // the terminating NULL
  if (envp_out) *envp_out = va_arg(ap, char* const*);
  return argv;
}

void unmap_args(void* mapped, size_t len) {
  if (mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(mapped), static_cast<long>(len), 0);
}

constexpr size_t kSvSlots = 256;  // the trampoline's argv and envp on the stack up to this

// A static or Go `path` (the file itself, PATH walked) is executed through bonsaictl's
// supervising trampoline (runtime/exec_supervise.h); if that exec fails, as asked.
void exec_supervised(const char* path, char* const* argv, char* const* e) {
  char* slots[kSvSlots];
  SvRedirect r;
  if (!exec_supervise_plan(path, argv, e, slots, kSvSlots, r)) return;
  // The service's supervisor running already: joined, the program is executed directly
  // (no bonsaictl, no new supervisor); if that exec fails, this process stays supervised.
  if (exec_supervise_join(r, path)) {
    real::execve(path, argv, r.envp);
    int err = errno;  // the caller's exec as asked fails alike and tells the program
    if (r.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(r.mapped), static_cast<long>(r.mapped_len), 0);
    errno = err;
    return;
  }
  if (!exec_supervise_needed(r)) return;  // no limit: executed as asked, like the trampoline would
  real::execve(r.path, r.argv, r.envp);
  exec_supervise_failed(r, path, errno);
}

int do_execve(const char* path, char* const* argv, char* const* envp) {
  return with_plan(envp, [&](char* const* e) {
    if (exec_supervise_wanted()) exec_supervised(path, argv, e);
    return real::execve(path, argv, e);
  });
}

int do_execvpe(const char* file, char* const* argv, char* const* envp) {
  return with_plan(envp, [&](char* const* e) {
    if (exec_supervise_wanted()) {
      char found[PATH_MAX];
      if (const char* p = exec_path_find(file, exec_supervise_path_env(), found, sizeof found))
        exec_supervised(p, argv, e);
    }
    return real::execvpe(file, argv, e);
  });
}

// posix_spawn(p) of a static or Go program: the trampoline is spawned instead (the
// file actions and attributes apply to it, and it execs the program in the same child).
template <typename Spawn>
int spawn_supervised(const char* path, char* const* argv, char* const* e, Spawn&& spawn, bool& done) {
  done = false;
  char* slots[kSvSlots];
  SvRedirect r;
  if (!path || !exec_supervise_plan(path, argv, e, slots, kSvSlots, r) || !exec_supervise_needed(r)) return 0;
  int rc = spawn(r.path, r.argv, r.envp);
  if (rc == 0) {
    done = true;
    if (r.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(r.mapped), static_cast<long>(r.mapped_len), 0);
    return 0;
  }
  int saved = errno;
  exec_supervise_failed(r, path, rc);
  errno = saved;
  return rc;
}

}  // namespace

extern "C" {
#pragma GCC visibility push(default)

int execve(const char* path, char* const argv[], char* const envp[]) noexcept { return do_execve(path, argv, envp); }

int execv(const char* path, char* const argv[]) noexcept { return do_execve(path, argv, environ); }

int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return do_execvpe(file, argv, envp);
}

int execvp(const char* file, char* const argv[]) noexcept { return do_execvpe(file, argv, environ); }

int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  return with_plan(envp, [&](char* const* e) { return real::fexecve(fd, argv, e); });
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) noexcept {
  return with_plan(envp, [&](char* const* e) { return real::execveat(dirfd, path, argv, e, flags); });
}

int execl(const char* path, const char* arg, ...) noexcept {
  char* stack[kArgStack];
  void* mapped;
  size_t len = 0;
  va_list ap;
  va_start(ap, arg);
  char** argv = gather_args(arg, ap, stack, mapped, len, nullptr);
  va_end(ap);
  if (!argv) return -1;
  int r = do_execve(path, argv, environ);
  int saved = errno;
  unmap_args(mapped, len);
  errno = saved;
  return r;
}

int execlp(const char* file, const char* arg, ...) noexcept {
  char* stack[kArgStack];
  void* mapped;
  size_t len = 0;
  va_list ap;
  va_start(ap, arg);
  char** argv = gather_args(arg, ap, stack, mapped, len, nullptr);
  va_end(ap);
  if (!argv) return -1;
  int r = do_execvpe(file, argv, environ);
  int saved = errno;
  unmap_args(mapped, len);
  errno = saved;
  return r;
}

int execle(const char* path, const char* arg, ...) noexcept {
  char* stack[kArgStack];
  void* mapped;
  size_t len = 0;
  char* const* envp = nullptr;
  va_list ap;
  va_start(ap, arg);
  char** argv = gather_args(arg, ap, stack, mapped, len, &envp);
  va_end(ap);
  if (!argv) return -1;
  int r = do_execve(path, argv, envp);
  int saved = errno;
  unmap_args(mapped, len);
  errno = saved;
  return r;
}

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* fa, const posix_spawnattr_t* attr,
                char* const argv[], char* const envp[]) {
  return spawn_with_plan(envp, [&](char* const* e) {
    if (exec_supervise_wanted()) {
      bool done;
      auto sv = [&](const char* p, char* const* a, char* const* en) { return real::posix_spawn(pid, p, fa, attr, a, en); };
      if (spawn_supervised(path, argv, e, sv, done) == 0 && done) return 0;
    }
    return real::posix_spawn(pid, path, fa, attr, argv, e);
  });
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* fa, const posix_spawnattr_t* attr,
                 char* const argv[], char* const envp[]) {
  return spawn_with_plan(envp, [&](char* const* e) {
    if (exec_supervise_wanted()) {
      char found[PATH_MAX];
      const char* p = exec_path_find(file, exec_supervise_path_env(), found, sizeof found);
      bool done;
      auto sv = [&](const char* tp, char* const* a, char* const* en) { return real::posix_spawn(pid, tp, fa, attr, a, en); };
      if (spawn_supervised(p, argv, e, sv, done) == 0 && done) return 0;
    }
    return real::posix_spawnp(pid, file, fa, attr, argv, e);
  });
}

// A "close everything" keeps the segment descriptor (it is close-on-exec, so an
// exec not made through our wrappers does not leak it).
int close_range(unsigned lo, unsigned hi, int flags) noexcept {
  int k = shm_kept_fd();
  auto uk = static_cast<unsigned>(k);
  if (k < 0 || uk < lo || uk > hi || (flags & CLOSE_RANGE_CLOEXEC)) return real::close_range(lo, hi, flags);
  int r = 0;
  if (uk > lo) r = real::close_range(lo, uk - 1, flags);
  if (r == 0 && uk < hi) r = real::close_range(uk + 1, hi, flags);
  return r;
}

void closefrom(int lo) noexcept {
  int k = shm_kept_fd();
  if (lo < 0) lo = 0;
  if (k < 0 || k < lo) return real::closefrom(lo);
  if (k > lo) {
    int saved = errno;
    if (real::close_range(static_cast<unsigned>(lo), static_cast<unsigned>(k - 1), 0) != 0)
      for (int fd = lo; fd < k; ++fd) raw_syscall3(SYS_close, fd, 0, 0);
    errno = saved;
  }
  real::closefrom(k + 1);
}

#pragma GCC visibility pop
}  // extern "C"
