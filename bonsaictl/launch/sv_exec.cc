// SPDX-License-Identifier: MIT
// The supervising trampoline (see sv_exec.h): the service's segment and limits, the
// supervised tree's environment (as `run --supervise` makes it), sv_launch, exec.
#include "launch/sv_exec.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <string>
#include <unistd.h>

#include "abi/program_kind.h"
#include "base/diag.h"
#include "launch/run_env.h"
#include "shm/seqlock.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"
#include "segment/shm_client.h"
#include "launch/sv_launch.h"
#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {
namespace {

std::string env_or(const char* name, const char* def) {
  const char* v = std::getenv(name);
  return v ? v : def;
}

// The segment the trampoline's process reaches: by the descriptor handed down (after
// taking the service owner's uid when it changed uid), else by name.
std::unique_ptr<Segment> open_segment(const std::string& service, int shm_fd, bool other_uid, const char* owner) {
  if (service.empty()) runtime_error("BONSAI_SERVICE is not set");
  std::unique_ptr<Segment> seg;
  if (other_uid) {
    ctl_target_user(static_cast<unsigned>(std::strtoul(owner, nullptr, 10)), getegid(), "");
    // No descriptor: a container's process (BONSAI_SHM_UID names the host's owner of the
    // segment its device mounted, docs/reference/containers.md) opens it by that name.
    seg = shm_fd < 0 ? Segment::open(service, false) : Segment::adopt(service, fcntl(shm_fd, F_DUPFD_CLOEXEC, 3));
  } else {
    seg = Segment::open(service, false);
  }
  seg->check();
  return seg;
}

// sv-exec --libc: a dynamic program whose loader takes no build of the
// library. One line, NOT limited in stat, and the program runs without the library
// (its loader would otherwise say it cannot load it): never a failure of bonsai's.
int foreign_libc_exec(const char* path, char** prog_argv, const std::string& service, int shm_fd, bool other_uid,
                      const char* owner) {
  ProgramLoader loader;
  program_kind(path, GoLook::Notes, nullptr, 0, &loader);
  fmt::print(stderr, "bonsai: {}: its loader {} takes no build of libbonsai.so (docs/reference/libc.md): it runs WITHOUT "
             "LIMITS\n", path, loader.interp[0] ? loader.interp : "(unknown)");
  try {  // best effort
    std::unique_ptr<Segment> seg = open_segment(service, shm_fd, other_uid, owner);
    mark_not_limited(seg.get(), path, kSlotForeignLibc);
  } catch (const std::exception&) {
  }
  if (const char* old = std::getenv("LD_PRELOAD")) setenv("LD_PRELOAD", preload_without_bonsai(old).c_str(), 1);
  unsetenv("BONSAI_LEAVE");  // set for this trampoline only
  unsetenv("BONSAI_SHM_FD");  // closed at the exec
  char* empty[] = {nullptr};
  execv(path, prog_argv[0] ? prog_argv : empty);
  int err = errno;
  fmt::print(stderr, "bonsai: cannot run {}: {}\n", path, std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace

int sv_exec_main(int argc, char** argv) {
  bool foreign = argc >= 1 && std::strcmp(argv[0], "--libc") == 0;
  if (foreign) ++argv, --argc;
  const char* path = nullptr;
  char** prog_argv = nullptr;
  std::string found;
  if (!foreign && argc >= 1 && std::strcmp(argv[0], "--") != 0) {
    // The public form: PROGRAM and its arguments as written (argv[0] is PROGRAM), PROGRAM
    // looked up in PATH as a shell would when it has no slash.
    found = std::strchr(argv[0], '/') ? std::string(argv[0]) : command_resolve(argv[0]);
    if (found.empty()) {
      fmt::print(stderr, "bonsai: cannot run {}: not found in PATH\n", argv[0]);
      return 127;
    }
    path = found.c_str();
    prog_argv = argv;
  } else if (argc >= 2 && std::strcmp(argv[0], "--") == 0) {
    // The library's trampoline form (what processes of every release run): PATH, then the
    // whole argv the program was executed with, its argv[0] included.
    path = argv[1];
    prog_argv = argv + 2;
  } else {
    fmt::print(stderr, "usage: bonsaictl sv-exec PROGRAM [ARGS...] (a static or Go program under the service's "
                       "caps; docs/reference/containers.md)\n");
    return kExitUsage;
  }
  std::string service = env_or("BONSAI_SERVICE", "");
  // A process that changed uid (setpriv, su, runuser) reaches the segment through the
  // descriptor the library handed down; the program itself does not inherit it.
  int shm_fd = -1;
  if (const char* v = std::getenv("BONSAI_SHM_FD")) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (end != v && !*end && n >= 0 && n < (1L << 30) && fcntl(static_cast<int>(n), F_SETFD, FD_CLOEXEC) == 0)
      shm_fd = static_cast<int>(n);
  }
  const char* owner = std::getenv("BONSAI_SHM_UID");
  bool other_uid = owner && *owner && std::strtoul(owner, nullptr, 10) != static_cast<unsigned long>(geteuid());
  if (foreign) return foreign_libc_exec(path, prog_argv, service, shm_fd, other_uid, owner);
  // The tree is supervised from here on: a libbonsai.so in it must not charge the same
  // calls again (as `run --supervise` does).
  if (const char* old = std::getenv("LD_PRELOAD")) setenv("LD_PRELOAD", preload_without_bonsai(old).c_str(), 1);
  setenv("BONSAI_LEAVE", "1", 1);
  unsetenv("BONSAI_SERVICE");
  unsetenv("BONSAI_SHM_FD");
  std::unique_ptr<Segment> seg;
  try {
    seg = open_segment(service, shm_fd, other_uid, owner);
    SvPlan plan{service, {}, env_or("BONSAI_IO_URING", "") != "allow", other_uid ? shm_fd : -1};
    plan.serve = true;  // the service's later static children join this supervisor
    uint64_t seq;
    if (!seqlock_read(seg->seg().limits, plan.limits, seq, 1000)) runtime_error("cannot read the service's limits");
    uint64_t protect = 0;
    seg->guarded([&] { protect = seg->seg().protect.calls.load(std::memory_order_relaxed); });
    plan.protect = protect & kSvTimedCalls;
    // Inside a strict tree its supervisor holds the program already (sv_launch.h). A
    // protected service's reads are timed by the supervisor (sv_protect.h), limits or not
    // (the library asks the same before it starts this trampoline: abi/sv_join.h).
    if (sv_service_supervised(plan.limits.count, protect) && !sv_inside_strict()) sv_launch(plan);
  } catch (const std::exception& e) {
    std::string why = e.what();  // sv_launch speaks to `run`'s user: what it says of --no-supervise does not apply
    if (size_t cut = why.find("; nothing was started"); cut != std::string::npos) why.resize(cut);
    if (why.rfind("cannot supervise: ", 0) == 0) why.erase(0, sizeof("cannot supervise: ") - 1);
    fmt::print(stderr, "bonsai: {} cannot be supervised ({}): it runs WITHOUT LIMITS\n", path, why);
    mark_not_limited(seg.get(), path, kSlotUnlimited);
  }
  seg.reset();
  char* empty[] = {nullptr};
  execv(path, prog_argv[0] ? prog_argv : empty);
  int err = errno;
  fmt::print(stderr, "bonsai: cannot run {}: {}\n", path, std::strerror(err));
  return err == ENOENT ? 127 : 126;
}

}  // namespace bonsai::ctl
