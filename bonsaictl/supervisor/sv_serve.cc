// SPDX-License-Identifier: MIT
// Programs that join a running supervisor (abi/sv_join.h, issue 49): the service's
// later static and Go children hand their listeners to the supervisor already running
// for the service instead of starting one each. The supervisor sends a connecting
// program of its own user and pid namespace (sv_rendezvous.h) the filter for the
// limits in force, then takes its listener and stderr; each listener is a tree of its
// own (Listener), answered on its own descriptor (Held::lfd); the supervisor's messages
// go to the newest tree's stderr.
#include <fcntl.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <linux/seccomp.h>

#include "abi/sv_join.h"
#include "supervisor/sv_filter.h"
#include "supervisor/sv_loop.h"
#include "supervisor/sv_rendezvous.h"
#include "sys/clock.h"

// Linux 6.6: a notification's answer wakes the waiting thread on this CPU at once (a
// direct switch, not a wake-up through the scheduler). Older headers lack the names.
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

namespace bonsai::ctl {

void Loop::listener_add(int fd, int err_fd) {
  // Each notified call waits for our answer: a synchronous wake-up shortens that round
  // trip (best effort: an older kernel says EINVAL and wakes as before).
  (void)::ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  listeners_.push_back(Listener{fd, err_fd});
  idle_since_ = 0;
  stderr_follow();
}

void Loop::listener_drop(size_t i) {
  int fd = listeners_[i].fd;
  // Calls held from an ended tree: their tasks are gone; nothing to answer.
  for (size_t k = 0; k < held_.size();) {
    Held& h = held_[k];
    if (h.lfd != fd) {
      ++k;
      continue;
    }
    if (h.wait_fd >= 0) ::close(h.wait_fd);
    if (h.emu.nr >= 0 && !h.paced && emu_held_) --emu_held_;
    sv_emu_close(h.emu);
    auto pit = procs_.find(h.tgid);
    if (pit != procs_.end() && pit->second.slot) slot_wait_leave(pit->second.slot);
    held_[k] = held_.back();
    held_.pop_back();
  }
  ::close(fd);
  if (listeners_[i].err_fd >= 0) ::close(listeners_[i].err_fd);
  listeners_.erase(listeners_.begin() + static_cast<long>(i));
  if (listeners_.empty()) idle_since_ = mono_ns();
  stderr_follow();
}

// fd 2 is the newest live tree's stderr, or /dev/null: a lingering supervisor keeps no
// pipe of an ended program open (a shell's `$(...)` or `| tee` would wait for it).
void Loop::stderr_follow() {
  int err = listeners_.empty() ? -1 : listeners_.back().err_fd;
  if (err >= 0) {
    ::dup3(err, 2, 0);
    return;
  }
  int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) {
    ::dup3(null, 2, 0);
    ::close(null);
  }
}

bool Loop::join_filter() {
  if (!view_.usable || lost_ || (view_.lim.set.count == 0 && !protect_calls_)) return false;  // the trampoline decides then
  if (join_seq_ == view_.seq && !join_bpf_.empty()) return true;
  join_bpf_.clear();
  std::string why;
  scmp_filter_ctx ctx =
      sv_filter_build(sv_notified_syscalls(view_.lim.set, protect_calls_), serve_.deny_io_uring, 0, why);
  if (!ctx) return false;
  int mfd = static_cast<int>(::memfd_create("bonsai-sv-bpf", MFD_CLOEXEC));
  bool ok = mfd >= 0 && seccomp_export_bpf(ctx, mfd) == 0;
  seccomp_release(ctx);
  off_t len = ok ? ::lseek(mfd, 0, SEEK_END) : -1;
  ok = ok && len > 0 && len % 8 == 0 && static_cast<uint64_t>(len) / 8 <= kSvJoinMaxInsns;
  if (ok) {
    SvJoinHeader hd{kSvJoinMagic, static_cast<uint32_t>(len / 8)};
    join_bpf_.resize(sizeof hd + static_cast<size_t>(len));
    std::memcpy(join_bpf_.data(), &hd, sizeof hd);
    ok = ::pread(mfd, join_bpf_.data() + sizeof hd, static_cast<size_t>(len), 0) == len;
  }
  if (mfd >= 0) ::close(mfd);
  if (!ok) join_bpf_.clear();
  join_seq_ = view_.seq;
  return ok;
}

void Loop::join_accept() {
  for (int k = 0; k < 16; ++k) {
    int c = ::accept4(serve_.accept_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;
    view_refresh();
    // Only the supervisor's own user joins (its buckets are that user's service's), from
    // its pid namespace: the calls of a process it cannot see would go uncharged.
    bool ok = sv_rendezvous_peer_ok(c) && join_filter() &&
              ::send(c, join_bpf_.data(), join_bpf_.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
                  static_cast<ssize_t>(join_bpf_.size());
    if (!ok) {
      ::close(c);  // the program starts a supervisor of its own
      continue;
    }
    joiners_.push_back(Joiner{c, mono_ns()});
  }
}

void Loop::join_receive(Joiner& j) {
  char byte;
  iovec v{&byte, 1};
  alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))];
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  if (::recvmsg(j.fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) != 1) return;
  int fds[2] = {-1, -1};
  size_t n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        if (n < 2) fds[n++] = fd;
        else ::close(fd);
      }
    }
  // The first must be a seccomp listener: one answers ENOENT for a notification id it
  // never gave (another descriptor ENOTTY, EINVAL).
  uint64_t id = 0;
  bool listener = fds[0] >= 0 && ::ioctl(fds[0], SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 && errno == ENOENT;
  if (!listener || byte != 'L') {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
    return;
  }
  listener_add(fds[0], fds[1]);
}

}  // namespace bonsai::ctl
