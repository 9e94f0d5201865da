// SPDX-License-Identifier: MIT
// The supervisor's trees and the programs that join it (sv_serve.h).
#include <fcntl.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <cerrno>
#include <cstring>
#include <linux/seccomp.h>

#include "abi/sv_join.h"
#include "supervisor/sv_filter.h"
#include "supervisor/sv_serve.h"
#include "supervisor/sv_syscalls.h"
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

void SvJoinServer::listener_add(int fd, int err_fd) {
  // Each notified call waits for our answer: a synchronous wake-up shortens that round
  // trip (best effort: an older kernel says EINVAL and wakes as before).
  (void)::ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
  listeners_.push_back(Listener{fd, err_fd});
  idle_since_ = 0;
  stderr_follow();
}

void SvJoinServer::listener_drop(size_t i) {
  int fd = listeners_[i].fd;
  ::close(fd);
  if (listeners_[i].err_fd >= 0) ::close(listeners_[i].err_fd);
  listeners_.erase(listeners_.begin() + static_cast<long>(i));
  if (listeners_.empty()) idle_since_ = mono_ns();
  stderr_follow();
}

// fd 2 is the newest live tree's stderr, or /dev/null: a lingering supervisor keeps no
// pipe of an ended program open (a shell's `$(...)` or `| tee` would wait for it).
void SvJoinServer::stderr_follow() {
  int err = listeners_.empty() ? -1 : listeners_.back().err_fd;
  if (err >= 0) {
    ::dup3(err, 2, 0);
    return;
  }
  // Opened once: every static child that ends puts it back (three calls less each).
  static const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null >= 0) ::dup3(null, 2, 0);
}

bool SvJoinServer::join_filter() {
  const SvView& view = lim_.view();
  if (!view.usable || lim_.lost() || (view.lim.set.count == 0 && !lim_.protect_calls())) return false;  // the trampoline decides then
  if (join_seq_ == view.seq && !join_bpf_.empty()) return true;
  join_bpf_.clear();
  std::string why;
  scmp_filter_ctx ctx =
      sv_filter_build(sv_notified_syscalls(view.lim.set, lim_.protect_calls()), serve_.deny_io_uring, 0, why);
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
  join_seq_ = view.seq;
  return ok;
}

bool SvJoinServer::join_accept() {
  for (int k = 0; k < 16; ++k) {
    int c = ::accept4(serve_.accept_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return false;
    lim_.refresh();
    // Only the supervisor's own user joins (its buckets are that user's service's), a
    // process it can see: the calls of one it cannot see would go uncharged.
    if (!sv_rendezvous_peer_ok(c, false)) {
      ::close(c);  // the program starts a supervisor of its own
      continue;
    }
    // A program that loaded the published filter sent its listener without waiting; one
    // that did not waits for the filter (a reply-free one may still be on its way: it
    // ignores the filter, and its listener follows on the same connection).
    if (join_receive(c)) {
      ::close(c);
      continue;
    }
    // The filter goes to a program of this pid namespace only.
    if (!sv_rendezvous_peer_ok(c, true)) {
      ::close(c);
      continue;
    }
    bool sent = join_filter() && ::send(c, join_bpf_.data(), join_bpf_.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
                                     static_cast<ssize_t>(join_bpf_.size());
    const uint64_t now = mono_ns();
    if (sent) {
      joiners_.push_back(Joiner{c, now + kJoinerPatienceNs});
    } else if (join_receive(c)) {  // it handed its listener over and went meanwhile
      ::close(c);
    } else if (unpublished_ns_ && now - unpublished_ns_ < kReplyFreeWindowNs) {
      // The filter was withdrawn a moment ago: this may be a program that loaded it
      // before and is about to hand its listener over. One waiting for an answer gets
      // none and starts its own supervisor when this closes.
      joiners_.push_back(Joiner{c, now + kReplyFreeWindowNs});
    } else {
      ::close(c);  // no filter to hand out: the program starts a supervisor of its own
    }
  }
  return true;
}

bool SvJoinServer::join_receive(int fd) {
  char byte;
  iovec v{&byte, 1};
  alignas(cmsghdr) char ctl[CMSG_SPACE(2 * sizeof(int))];
  msghdr m{};
  m.msg_iov = &v;
  m.msg_iovlen = 1;
  m.msg_control = ctl;
  m.msg_controllen = sizeof ctl;
  // A program that loaded the published filter closes its end with the filter sent to
  // it unread: the first receive then reports ECONNRESET (once), its listener still queued.
  ssize_t len = ::recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (len < 0 && errno == ECONNRESET) len = ::recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (len != 1) return false;
  int fds[2] = {-1, -1};
  size_t n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; ++i) {
        int got;
        std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
        if (n < 2) fds[n++] = got;
        else ::close(got);
      }
    }
  // The first must be a seccomp listener: one answers ENOENT for a notification id it
  // never gave (another descriptor ENOTTY, EINVAL).
  uint64_t id = 0;
  bool listener = fds[0] >= 0 && ::ioctl(fds[0], SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 && errno == ENOENT;
  if (!listener || byte != 'L') {
    for (int f : fds)
      if (f >= 0) ::close(f);
    return false;
  }
  listener_add(fds[0], fds[1]);
  return true;
}

void SvJoinServer::publish() {
  if (serve_.accept_fd < 0 || serve_.dir_fd < 0) return;
  if (!join_filter()) {  // no filter to hand out: joiners take the round trip (and the trampoline)
    if (published_seq_) unpublish();
    return;
  }
  if (published_seq_ == join_seq_) return;
  char name[96];
  if (!sv_join_file_name(name, sizeof name, serve_.service.c_str())) return;
  // Written aside and renamed: a joiner reads a whole file or none. The temporary name
  // starts with a dot too (no service's socket) and is not a published name.
  const std::string tmp = ".tmp." + std::to_string(::getpid()) + "." + serve_.service;
  ::unlinkat(serve_.dir_fd, tmp.c_str(), 0);
  int f = ::openat(serve_.dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (f < 0) return;
  SvJoinHeader hd;
  std::memcpy(&hd, join_bpf_.data(), sizeof hd);
  SvJoinFileHeader fh{kSvJoinFileMagic, hd.insns, join_seq_, static_cast<int32_t>(::getpid()), 0};
  const size_t body = join_bpf_.size() - sizeof hd;
  struct stat st{};
  bool ok = ::write(f, &fh, sizeof fh) == static_cast<ssize_t>(sizeof fh) &&
            ::write(f, join_bpf_.data() + sizeof hd, body) == static_cast<ssize_t>(body) && ::fstat(f, &st) == 0;
  ::close(f);
  if (!ok || ::renameat(serve_.dir_fd, tmp.c_str(), serve_.dir_fd, name) != 0) {
    ::unlinkat(serve_.dir_fd, tmp.c_str(), 0);
    return;
  }
  published_seq_ = join_seq_;
  published_dev_ = st.st_dev;
  published_ino_ = st.st_ino;
}

void SvJoinServer::unpublish() {
  if (!published_seq_ || serve_.dir_fd < 0) return;
  published_seq_ = 0;
  unpublished_ns_ = mono_ns();
  char name[96];
  struct stat st{};
  if (sv_join_file_name(name, sizeof name, serve_.service.c_str()) &&
      ::fstatat(serve_.dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == published_dev_ &&
      st.st_ino == published_ino_)
    ::unlinkat(serve_.dir_fd, name, 0);
}

bool SvJoinServer::drain_before_end() {
  if (serve_.accept_fd < 0) return false;
  unpublish();
  // Shut to new connections (they are refused: the program starts its own supervisor);
  // those already queued are still accepted.
  ::shutdown(serve_.accept_fd, SHUT_RD);
  while (join_accept()) {
  }
  serve_.accept_fd = -1;  // no joiner from here on; the socket is closed and removed at the end
  return !listeners_.empty() || !joiners_.empty();
}

bool SvJoinServer::finished(uint64_t now) const {
  return listeners_.empty() && joiners_.empty() && (serve_.accept_fd < 0 || now - idle_since_ >= kSvLingerNs);
}

void SvJoinServer::poll_fds(std::vector<pollfd>& fds, size_t& nl, size_t& nj) const {
  for (const Listener& l : listeners_) fds.push_back(pollfd{l.fd, POLLIN, 0});
  nl = fds.size();
  if (serve_.accept_fd >= 0) fds.push_back(pollfd{serve_.accept_fd, POLLIN, 0});
  nj = fds.size();
  for (const Joiner& j : joiners_) fds.push_back(pollfd{j.fd, POLLIN, 0});
}

uint64_t SvJoinServer::timeout(uint64_t now, uint64_t timeout_ns) const {
  if (listeners_.empty()) timeout_ns = std::min(timeout_ns, idle_since_ + kSvLingerNs - now);
  if (!joiners_.empty()) timeout_ns = std::min<uint64_t>(timeout_ns, 100'000'000);
  return timeout_ns;
}

void SvJoinServer::serve(std::vector<pollfd>& fds, size_t nl, size_t nj, int ready) {
  // A joiner is dropped once it sent its listener or hung up (it gave up waiting for the
  // filter: it runs the trampoline). Not on a short clock: one that has loaded the
  // filter and is about to send would lose its listener with the socket, and its
  // limited calls would then fail. A same-user peer that never sends goes at its deadline.
  for (size_t i = 0; i < joiners_.size();) {
    short ev = nj + i < fds.size() && fds[nj + i].fd == joiners_[i].fd ? fds[nj + i].revents : 0;
    if (ev || mono_ns() > joiners_[i].deadline) {
      if (ev & POLLIN) join_receive(joiners_[i].fd);
      ::close(joiners_[i].fd);
      joiners_.erase(joiners_.begin() + static_cast<long>(i));
      fds.erase(fds.begin() + static_cast<long>(nj + i));
      continue;
    }
    ++i;
  }
  if (ready <= 0) return;
  if (serve_.accept_fd >= 0 && (fds[nl].revents & POLLIN)) join_accept();
}

void SvJoinServer::close_joiners() {
  for (Joiner& j : joiners_) ::close(j.fd);
  joiners_.clear();
}

}  // namespace bonsai::ctl
