// SPDX-License-Identifier: MIT
// The exec of a static or Go program turned into an exec of bonsaictl's supervising
// trampoline (see exec_supervise.h). Raw system calls and the caller's stack only.
#include "runtime/exec_supervise.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "abi/sv_join.h"

#include "log/blog.h"
#include "runtime/exec_env.h"
#include "runtime/exec_kind.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"
#include "shm/shm_name.h"
#include "sys/raw_stat.h"
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
  out = SvRedirect{nullptr, nullptr, nullptr, nullptr, 0, false};
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
  out.foreign = foreign;
  out.path = ctl;
  out.argv = a;
  out.envp = e;
  return true;
}

namespace {

// bonsaictl/supervisor/sv_filter.h: the one sendmsg() the filter lets through unnotified.
constexpr int kJoinHandoffFd = 1017;
constexpr int kJoinHandoffFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_CMSG_CLOEXEC;
constexpr int kJoinWaitMs = 1000;  // a supervisor that accepted and sends nothing: the trampoline's way

long sys(long nr, long a = 0, long b = 0, long c = 0) noexcept { return raw_syscall3(nr, a, b, c); }

bool parse_uint(const char* s, unsigned long max, unsigned long& out) noexcept {
  if (!s || !*s) return false;
  unsigned long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9' || v > (max - static_cast<unsigned long>(*s - '0')) / 10) return false;
    v = v * 10 + static_cast<unsigned long>(*s - '0');
  }
  out = v;
  return true;
}

// The filter from the supervisor (sv_join.h), on this stack: up to kSvJoinMaxInsns.
struct JoinMsg {
  SvJoinHeader hd;
  sock_filter insns[kSvJoinMaxInsns];
};

// The pid namespace of `path` ("/proc/.../ns/pid"): its device and inode. false if unreadable.
bool pid_ns_of(const char* path, dev_t& dev, ino_t& ino) noexcept {
  struct stat st;
  if (raw_fstatat(AT_FDCWD, path, st, 0) != 0) return false;
  dev = st.st_dev;
  ino = st.st_ino;
  return true;
}

// Is the peer `pid` (as this process sees it: 0 when it cannot) in this process's pid namespace?
bool same_pid_ns(int pid) noexcept {
  if (pid <= 0) return false;
  char path[48];
  size_t n = 0;
  if (!detail::sv_join_put(path, sizeof path - 1, n, "/proc/") ||
      !detail::sv_join_put_uint(path, sizeof path - 1, n, static_cast<unsigned long>(pid)) ||
      !detail::sv_join_put(path, sizeof path - 1, n, "/ns/pid"))
    return false;
  path[n] = '\0';
  dev_t d1 = 0, d2 = 0;
  ino_t i1 = 0, i2 = 0;
  return pid_ns_of("/proc/self/ns/pid", d1, i1) && pid_ns_of(path, d2, i2) && d1 == d2 && i1 == i2;
}

// The filter the serving supervisor published in the checked directory `d` (sv_join.h,
// the reply-free join), read into `msg`. @return its header (magic 0 when there is none
// to use: not there, not this user's alone, the wrong size).
SvJoinFileHeader join_published(int d, const char* service, unsigned euid, JoinMsg& msg) noexcept {
  SvJoinFileHeader hd{};
  char name[96];
  if (!sv_join_file_name(name, sizeof name, service)) return hd;
  // O_NONBLOCK: a FIFO at the name must not hold the exec (it is refused below).
  int f = static_cast<int>(raw_syscall6(SYS_openat, d, reinterpret_cast<long>(name),
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0, 0, 0));
  if (f < 0) return hd;
  struct stat st;
  SvJoinFileHeader got{};
  bool ok = raw_fstat(f, st) == 0 && S_ISREG(st.st_mode) && st.st_uid == euid && (st.st_mode & 077) == 0 &&
            raw_syscall6(SYS_pread64, f, reinterpret_cast<long>(&got), sizeof got, 0, 0, 0) ==
                static_cast<long>(sizeof got) &&
            got.magic == kSvJoinFileMagic && got.insns > 0 && got.insns <= kSvJoinMaxInsns &&
            static_cast<uint64_t>(st.st_size) == sizeof got + got.insns * sizeof(sock_filter);
  const long want = ok ? static_cast<long>(got.insns * sizeof(sock_filter)) : 0;
  ok = ok && raw_syscall6(SYS_pread64, f, reinterpret_cast<long>(msg.insns), want, sizeof got, 0, 0) == want;
  sys(SYS_close, f);
  if (ok) hd = got;
  return hd;
}

// Connects to the service's rendezvous (abi/sv_join.h) and takes the filter: the one
// the supervisor published for the limits in force when it is there (the listener is
// then handed over without waiting for an answer), else the one it sends.
// @return the socket (moved to kJoinHandoffFd), or -1: the trampoline's way, which says
// why when the rendezvous cannot be used (its supervisor does).
int join_connect(JoinMsg& msg, long& insns, int& peer) noexcept {
  const char* service = exec_env_kept("BONSAI_SERVICE=");
  const char* prefix = exec_env_kept("BONSAI_SHM_PREFIX=");
  if (!prefix) prefix = "";
  if (!service || !shm_service_name_valid(service) || !shm_prefix_valid(prefix)) return -1;
  // Only the segment's owner joins (as this user namespace maps it): a process of
  // another uid, root included, starts a supervisor of its own.
  unsigned owner = shm_owner_uid();
  unsigned euid = static_cast<unsigned>(sys(SYS_geteuid));
  if (owner != euid && shm_uid_here(owner) != euid) return -1;
  // The hand-over descriptor must fit the soft limit, which is not changed here.
  rlimit lim{};
  if (sys(SYS_getrlimit, RLIMIT_NOFILE, reinterpret_cast<long>(&lim)) != 0 || lim.rlim_cur <= kJoinHandoffFd) return -1;
  if (sys(SYS_fcntl, kJoinHandoffFd, F_GETFD) >= 0) return -1;  // the program's own: kept for it
  char dir[160];
  if (!sv_join_dir(dir, sizeof dir, prefix, owner)) return -1;
  // The directory is used only if it is this user's and closed to others (someone else
  // may have made it first), and the socket is reached through what was checked.
  int d = static_cast<int>(sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>(dir), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (d < 0) return -1;  // none yet: no supervisor
  struct stat st;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  size_t n = 0;
  if (raw_fstat(d, st) != 0 || !sv_join_dir_ok(st, euid) || !(n = sv_join_via(a.sun_path, sizeof a.sun_path, d, service)))
    return sys(SYS_close, d), -1;
  const SvJoinFileHeader published = join_published(d, service, euid, msg);
  // Non-blocking: a listener that never accepts (a full backlog) fails the connect with
  // EAGAIN instead of holding this exec.
  int s = static_cast<int>(sys(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s < 0) return sys(SYS_close, d), -1;
  long rc = sys(SYS_connect, s, reinterpret_cast<long>(&a), static_cast<long>(offsetof(sockaddr_un, sun_path) + n + 1));
  sys(SYS_close, d);
  auto fail = [&]() { return sys(SYS_close, s), -1; };
  if (rc != 0) return fail();
  // The supervisor must run as this user (no root exception) in this pid namespace:
  // one that cannot see this program would neither charge nor count its calls.
  ucred cr{};
  socklen_t cl = sizeof cr;
  if (raw_syscall6(SYS_getsockopt, s, SOL_SOCKET, SO_PEERCRED, reinterpret_cast<long>(&cr), reinterpret_cast<long>(&cl), 0) != 0 ||
      cr.uid != euid || cr.pid <= 0)
    return fail();  // it gets no listener
  // Published by this very supervisor for the limits in force now (an odd sequence is
  // a rewrite under way): no answer to wait for. The pid it wrote (its own, in its pid
  // namespace) is the pid this process sees it by: the same namespace, without the two
  // procfs lookups of same_pid_ns (~10 us of every static child's start).
  const uint64_t seq_now = shm_limits_seq_now();
  if (published.magic == kSvJoinFileMagic && published.pid == cr.pid && seq_now && !(seq_now & 1) &&
      published.limits_seq == seq_now) {
    insns = published.insns;
    peer = cr.pid;
    int h = static_cast<int>(sys(SYS_dup3, s, kJoinHandoffFd, O_CLOEXEC));
    sys(SYS_close, s);
    return h == kJoinHandoffFd ? h : -1;
  }
  if (!same_pid_ns(cr.pid)) return fail();
  pollfd p{s, POLLIN, 0};
  if (sys(SYS_poll, reinterpret_cast<long>(&p), 1, kJoinWaitMs) != 1) return fail();
  long got = raw_syscall6(SYS_recvfrom, s, reinterpret_cast<long>(&msg), sizeof msg, MSG_DONTWAIT, 0, 0);
  if (got < static_cast<long>(sizeof msg.hd) || msg.hd.magic != kSvJoinMagic || msg.hd.insns == 0 ||
      msg.hd.insns > kSvJoinMaxInsns || got != static_cast<long>(sizeof msg.hd + msg.hd.insns * sizeof(sock_filter)))
    return fail();
  insns = msg.hd.insns;
  peer = cr.pid;
  int h = static_cast<int>(sys(SYS_dup3, s, kJoinHandoffFd, O_CLOEXEC));
  sys(SYS_close, s);
  return h == kJoinHandoffFd ? h : -1;
}

}  // namespace

bool exec_supervise_join(SvRedirect& r, const char* path) noexcept {
  if (!r.envp || !path) return false;
  int saved = errno;
  // A file this process may not execute fails the exec: it would stay filtered.
  if (sys(SYS_access, reinterpret_cast<long>(path), X_OK) != 0) return errno = saved, false;
  JoinMsg msg;
  long insns = 0;
  int peer = 0;
  int h = join_connect(msg, insns, peer);
  if (h < 0) return errno = saved, false;
  // As libseccomp does for the trampoline: no_new_privs unless root (CAP_SYS_ADMIN).
  if (sys(SYS_geteuid) != 0 && raw_syscall6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0) != 0)
    return sys(SYS_close, h), errno = saved, false;
  sock_fprog prog{static_cast<unsigned short>(insns), msg.insns};
  long lfd = sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_SPEC_ALLOW,
                 reinterpret_cast<long>(&prog));
  if (lfd == -EINVAL) lfd = sys(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, reinterpret_cast<long>(&prog));
  if (lfd < 0) return sys(SYS_close, h), errno = saved, false;
  // Yama ptrace_scope 1: the supervisor is no ancestor; named as this program's ptracer it
  // may read its memory and copy its descriptors (EINVAL without Yama: nothing to do).
  if (peer > 0) raw_syscall6(SYS_prctl, PR_SET_PTRACER, peer, 0, 0, 0, 0);
  // Filtered from here on: the listener and this program's stderr go to the supervisor
  // (the one sendmsg the filter lets through), then the program is executed as asked.
  int fds[2] = {static_cast<int>(lfd), 2};
  int nfd = sys(SYS_fcntl, 2, F_GETFD) >= 0 ? 2 : 1;
  char byte = 'L';
  iovec v{&byte, 1};
  alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(nfd * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds, nfd * sizeof(int));
  long sent = sys(SYS_sendmsg, h, reinterpret_cast<long>(&m), kJoinHandoffFlags);
  sys(SYS_close, h);
  sys(SYS_close, lfd);
  if (sent != 1)  // the supervisor went away this very moment: its limited calls fail (ENOSYS)
    BONSAI_LOG_ONCE(LogLevel::Warn, "handing %s's listener to the service's supervisor failed (errno %ld): its limited "
                    "calls fail", path, -sent);
  // The program's environment: as the trampoline leaves it (bonsaictl/launch/sv_exec.cc).
  char** e = const_cast<char**>(r.envp);
  size_t o = 0;
  for (size_t i = 0; e[i]; ++i) {
    if (std::strncmp(e[i], "BONSAI_SHM_FD=", 14) == 0) {
      unsigned long fd = 0;
      if (parse_uint(e[i] + 14, 1u << 30, fd)) sys(SYS_fcntl, static_cast<long>(fd), F_SETFD, FD_CLOEXEC);
      continue;
    }
    if (std::strncmp(e[i], "BONSAI_SERVICE=", 15) == 0) continue;
    e[o++] = e[i];
  }
  e[o] = nullptr;
  errno = saved;
  return true;
}

bool exec_supervise_needed(SvRedirect& r) noexcept {
  if (r.foreign || shm_service_supervised()) return true;
  int saved = errno;
  if (r.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(r.mapped), static_cast<long>(r.mapped_len), 0);
  r.mapped = nullptr;
  errno = saved;
  return false;
}

void exec_supervise_failed(const SvRedirect& r, const char* path, int err) noexcept {
  BONSAI_LOG_ONCE(LogLevel::Warn, "cannot start the supervisor %s for %s (errno %d): it runs unsupervised, NOT "
                  "limited", r.path, path, err);
  if (r.mapped) raw_syscall3(SYS_munmap, reinterpret_cast<long>(r.mapped), static_cast<long>(r.mapped_len), 0);
  errno = err;
}

}  // namespace bonsai
