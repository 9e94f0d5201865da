// SPDX-License-Identifier: MIT
// The supervised launch (see sv_launch.h): fork twice (the supervisor is nobody's
// child but init's), load the filter (supervisor/sv_filter.h), pass the listener with
// SCM_RIGHTS, wait for its answer.
#include "launch/sv_launch.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <seccomp.h>
#include <algorithm>
#include <atomic>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/strict_mark.h"
#include "base/diag.h"
#include "segment/shm_client.h"
#include "segment/target_user.h"
#include "supervisor/supervisor.h"
#include "supervisor/sv_filter.h"
#include "supervisor/sv_rendezvous.h"
#include "supervisor/sv_say.h"
#include "supervisor/sv_syscalls.h"
#include "supervisor/sv_target.h"

namespace bonsai::ctl {
namespace {

constexpr int kHandoffFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_CMSG_CLOEXEC;

// The supervisor's answer, in a page both processes share: once the filter is loaded
// the launcher makes no data call of its own (its reads would be charged to the
// program it becomes), so it waits on a futex, not on a read.
struct Answer {
  std::atomic<uint32_t> state;  // 0 pending, 1 ready, 2 failed
  int32_t pid;                  // the supervisor's (set before state)
  char text[504];
};
static_assert(sizeof(Answer) == 512);

void answer_give(Answer* a, uint32_t state, const std::string& text) {
  size_t n = std::min(text.size(), sizeof a->text - 1);
  std::memcpy(a->text, text.data(), n);
  a->text[n] = '\0';
  a->state.store(state, std::memory_order_release);
  syscall(SYS_futex, &a->state, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

// Waits up to 10 s. @return the state (0: no answer).
uint32_t answer_wait(Answer* a) {
  for (int i = 0; i < 100; ++i) {
    uint32_t st = a->state.load(std::memory_order_acquire);
    if (st) return st;
    timespec ts{0, 100'000'000};
    syscall(SYS_futex, &a->state, FUTEX_WAIT, 0, &ts, nullptr, 0);
  }
  return a->state.load(std::memory_order_acquire);
}


int listener_receive(int sock) {
  char byte;
  iovec v{&byte, 1};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))];
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1) return -1;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int))) return -1;
  int fd;
  std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

bool listener_send(int sock, int fd, uint32_t mark) {
  char byte = 'L';
  iovec v{&byte, 1};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  if (mark)  // under the strict filter: marked, like the library's calls
    return syscall(SYS_sendmsg, strict_marked_arg(mark, static_cast<uint64_t>(sock)), &m, kHandoffFlags) == 1;
  return sendmsg(sock, &m, kHandoffFlags) == 1;
}

// The supervisor process: detached from the terminal (a Ctrl-C meant for the command
// must not take its supervisor away first), stdin/stdout closed, stderr kept for its
// one-line complaints.
[[noreturn]] void supervisor_process(int sock, Answer* answer, const std::string& service, int shm_fd,
                                     const std::vector<int>& notified, bool strict, bool serve, bool deny_io_uring,
                                     unsigned owner) {
  setsid();
  prctl(PR_SET_NAME, "bonsai-sv");  // what ps and top show
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  // Started with a standard descriptor closed, the hand-over socket may be one of them:
  // moved above them first, so that /dev/null in their place closes nothing of ours and
  // no message lands in a descriptor that is not a stderr.
  if (sock <= 2) sock = fcntl(sock, F_DUPFD_CLOEXEC, 3);
  if (shm_fd >= 0 && shm_fd <= 2) shm_fd = fcntl(shm_fd, F_DUPFD_CLOEXEC, 3);
  // Nothing else of the program's: a supervisor that lingers for later children (abi/
  // sv_join.h) must not keep its pipes (a reader waiting for their end) or sockets open.
  int keep[2] = {std::min(sock, shm_fd < 0 ? sock : shm_fd), std::max(sock, shm_fd)};
  unsigned lo = 3;
  for (int k : keep) {
    if (k >= static_cast<int>(lo)) {
      if (k > static_cast<int>(lo)) syscall(SYS_close_range, lo, static_cast<unsigned>(k - 1), 0);
      lo = static_cast<unsigned>(k) + 1;
    }
  }
  syscall(SYS_close_range, lo, ~0u, 0);
  if (int null = open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (fcntl(2, F_GETFD) < 0) dup2(null, 2);  // stderr closed: messages go nowhere
    if (null > 2) close(null);
  }
  // A descriptor per thread and process it supervises: as many as it may have. Test
  // hooks (docs/reference/supervised.md "Threads the supervisor cannot see"): a lower limit, and the
  // blindness of Yama or a non-dumpable program on a machine without them.
  const char* nofile = getenv("BONSAI_SV_TEST_NOFILE");
  sv_fds_setup(nofile ? std::strtoull(nofile, nullptr, 10) : 0);
  sv_target_test_blind(getenv("BONSAI_SV_TEST_BLIND"));
  int listener = listener_receive(sock);
  close(sock);
  if (listener < 0) {
    answer_give(answer, 2, "the listener did not arrive");
    _exit(1);
  }
  std::unique_ptr<Segment> seg;
  try {
    seg = shm_fd >= 0 ? Segment::adopt(service, fcntl(shm_fd, F_DUPFD_CLOEXEC, 3)) : Segment::open(service, false);
    seg->check();
  } catch (const std::exception& e) {
    answer_give(answer, 2, e.what());
    _exit(1);
  }
  // The service's later static and Go children join it (abi/sv_join.h), when the
  // segment is this user's and the rendezvous is free of what someone else put there.
  std::string why;
  SvRendezvous rv;
  if (serve) rv = sv_rendezvous_open(service, shm_prefix(), owner, why);
  // Said once for the service (every static program's supervisor meets it), again only
  // after a supervisor served the rendezvous since: the notices word in the segment.
  std::atomic<uint32_t>& notices = seg->seg().exited.notices;
  if (rv.fd >= 0) notices.fetch_and(~kNoticeRendezvous, std::memory_order_relaxed);
  if (!why.empty() && !(notices.fetch_or(kNoticeRendezvous, std::memory_order_relaxed) & kNoticeRendezvous))
    sv_say(fmt::format("bonsaictl supervisor ({}): {}; until then each of the service's static programs starts a "
                       "supervisor of its own (said once for the service)\n", service, why));
  SvServe sv{rv.fd, deny_io_uring, rv.dir_fd, rv.name};
  answer->pid = getpid();
  answer_give(answer, 1, "");
  munmap(answer, sizeof *answer);
  try {
    supervise(listener, *seg, notified, strict, sv);
  } catch (const std::exception& e) {
    sv_rendezvous_close(rv);
    sv_say(fmt::format("bonsaictl supervisor ({}): {}; the service's limited calls now fail (ENOSYS)\n", service,
               e.what()));
    _exit(1);
  }
  sv_rendezvous_close(rv);
  _exit(0);
}

}  // namespace

void sv_launch(const SvPlan& plan) {
  std::vector<int> nrs = sv_notified_syscalls(plan.limits, plan.protect);
  std::string why;
  scmp_filter_ctx ctx = sv_filter_build(nrs, plan.deny_io_uring, plan.strict_mark, why);
  // What the user can do instead: without --strict (the library alone), or without a supervisor.
  const char* instead = plan.strict_mark ? "run without --strict to limit what libbonsai.so sees"
                                         : "--no-supervise runs it WITHOUT LIMITS";
  if (!ctx) runtime_error(fmt::format("cannot supervise: {}; nothing was started ({})", why, instead));
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    runtime_error(fmt::format("cannot supervise: socketpair: {}", std::strerror(errno)));
  // The filter lets one sendmsg() on kHandoffFd through: a soft open-file limit below it
  // is raised for the hand-over and put back before the program starts (its limit stays
  // what it was); a hard limit below it is what is missing.
  rlimit nofile{};
  bool nofile_raised = false;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur <= static_cast<rlim_t>(kHandoffFd)) {
    rlimit up{static_cast<rlim_t>(kHandoffFd) + 1, nofile.rlim_max};
    if (nofile.rlim_max <= static_cast<rlim_t>(kHandoffFd) || setrlimit(RLIMIT_NOFILE, &up) != 0) {
      close(sp[0]);
      close(sp[1]);
      runtime_error(fmt::format("cannot supervise: the open-file limit is {} (hard {}): the supervisor's hand-over "
                                "needs descriptor {}, so a hard limit of at least {} (ulimit -Hn, systemd "
                                "LimitNOFILE=); nothing was started",
                                static_cast<uint64_t>(nofile.rlim_cur), static_cast<uint64_t>(nofile.rlim_max),
                                kHandoffFd, kHandoffFd + 1));
    }
    nofile_raised = true;
  }
  auto nofile_back = [&] {
    if (nofile_raised) setrlimit(RLIMIT_NOFILE, &nofile);
  };
  if (dup3(sp[0], kHandoffFd, O_CLOEXEC) < 0) {
    nofile_back();
    runtime_error(fmt::format("cannot supervise: dup3: {}", std::strerror(errno)));
  }
  close(sp[0]);
  auto* answer = static_cast<Answer*>(mmap(nullptr, sizeof(Answer), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (answer == MAP_FAILED) runtime_error(fmt::format("cannot supervise: mmap: {}", std::strerror(errno)));
  answer->state.store(0);
  fflush(nullptr);
  pid_t mid = fork();
  if (mid < 0) runtime_error(fmt::format("cannot supervise: fork: {}", std::strerror(errno)));
  if (mid == 0) {  // twice, so that the supervisor is not a child of the command
    close(kHandoffFd);
    pid_t sv = fork();
    if (sv == 0)
      supervisor_process(sp[1], answer, plan.service, plan.shm_fd, nrs, plan.strict_mark != 0,
                         plan.serve && !plan.strict_mark, plan.deny_io_uring,
                         ctl_uid());  // the segment's owner (sv_exec takes BONSAI_SHM_UID's)
    _exit(sv < 0 ? 1 : 0);
  }
  close(sp[1]);
  int mid_status = 0;
  while (waitpid(mid, &mid_status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(mid_status) || WEXITSTATUS(mid_status) != 0) runtime_error("cannot supervise: the supervisor process did not start");
  int rc = seccomp_load(ctx);
  if (rc != 0) {
    seccomp_release(ctx);
    close(kHandoffFd);
    nofile_back();
    runtime_error(fmt::format("cannot supervise: the kernel refused the seccomp filter ({}); nothing was started "
                              "({})",
                              std::strerror(-rc), instead));
  }
  int listener = seccomp_notify_fd(ctx);
  seccomp_release(ctx);
  if (listener < 0 || !listener_send(kHandoffFd, listener, plan.strict_mark)) {
    // Filtered already: calls the filter notifies fail (ENOSYS) once the listener is gone.
    runtime_error(fmt::format("cannot supervise: handing the listener over failed: {}", std::strerror(errno)));
  }
  close(listener);
  close(kHandoffFd);
  nofile_back();
  uint32_t st = answer_wait(answer);
  std::string text = answer->text;
  pid_t sv_pid = answer->pid;
  munmap(answer, sizeof *answer);
  if (st == 1) {
    // Under Yama ptrace_scope 1 a supervisor that is not the program's ancestor may not
    // read its memory nor copy its descriptors: the program names its supervisor as
    // the one that may (its threads included; the processes it starts do not). EINVAL
    // without Yama: nothing to do. What it still cannot see is charged conservatively.
    if (sv_pid > 0) prctl(PR_SET_PTRACER, static_cast<unsigned long>(sv_pid), 0, 0, 0);
    return;
  }
  runtime_error(fmt::format("cannot supervise: the supervisor could not start{}{}", text.empty() ? "" : ": ", text));
}

}  // namespace bonsai::ctl
