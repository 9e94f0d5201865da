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
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/strict_mark.h"
#include "base/diag.h"
#include "segment/shm_client.h"
#include "supervisor/supervisor.h"
#include "supervisor/sv_filter.h"
#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {
namespace {

constexpr int kHandoffFlags = MSG_NOSIGNAL | MSG_DONTWAIT | MSG_CMSG_CLOEXEC;

// The supervisor's answer, in a page both processes share: once the filter is loaded
// the launcher makes no data call of its own (its reads would be charged to the
// program it becomes), so it waits on a futex, not on a read.
struct Answer {
  std::atomic<uint32_t> state;  // 0 pending, 1 ready, 2 failed
  char text[508];
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
                                     const std::vector<int>& notified, bool strict) {
  setsid();
  prctl(PR_SET_NAME, "bonsai-sv");  // what ps and top show
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  if (int null = open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
  }
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
  answer_give(answer, 1, "");
  munmap(answer, sizeof *answer);
  try {
    supervise(listener, *seg, notified, strict);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bonsaictl supervisor ({}): {}; the service's limited calls now fail (ENOSYS)\n", service,
               e.what());
    _exit(1);
  }
  _exit(0);
}

}  // namespace

void sv_launch(const SvPlan& plan) {
  std::vector<int> nrs = sv_notified_syscalls(plan.limits);
  std::string why;
  scmp_filter_ctx ctx = sv_filter_build(nrs, plan.deny_io_uring, plan.strict_mark, why);
  // What the user can do instead: without --strict (the library alone), or without a supervisor.
  const char* instead = plan.strict_mark ? "run without --strict to limit what libbonsai.so sees"
                                         : "--no-supervise runs it WITHOUT LIMITS";
  if (!ctx) runtime_error(fmt::format("cannot supervise: {}; nothing was started ({})", why, instead));
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0)
    runtime_error(fmt::format("cannot supervise: socketpair: {}", std::strerror(errno)));
  if (dup3(sp[0], kHandoffFd, O_CLOEXEC) < 0)
    runtime_error(fmt::format("cannot supervise: dup3: {}", std::strerror(errno)));
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
    if (sv == 0) supervisor_process(sp[1], answer, plan.service, plan.shm_fd, nrs, plan.strict_mark != 0);
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
  uint32_t st = answer_wait(answer);
  std::string text = answer->text;
  munmap(answer, sizeof *answer);
  if (st == 1) return;
  runtime_error(fmt::format("cannot supervise: the supervisor could not start{}{}", text.empty() ? "" : ": ", text));
}

}  // namespace bonsai::ctl
