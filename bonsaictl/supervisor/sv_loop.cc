// SPDX-License-Identifier: MIT
// The supervisor's loop (sv_loop.h) and supervise(), the room's entry point.
#include "supervisor/sv_loop.h"

#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "shm/shm_guard.h"
#include "sys/clock.h"

namespace bonsai::ctl {

SvLoop::SvLoop(int fd, Segment& seg, std::vector<int> notified, bool strict, SvServe serve)
    : first_fd_(fd),
      seg_(seg),
      lim_(seg, std::move(notified)),
      ledger_(seg, lim_, strict),
      trees_(lim_, serve),
      timed_(seg, lim_, ledger_, trees_),
      pacer_(lim_, ledger_),
      handler_(seg, lim_, ledger_, held_, timed_, pacer_, stats_) {
  lim_.follow(this);
}

void SvLoop::view_lost() { ledger_.lose_slots(); }

void SvLoop::view_changed(const LimitsView& prev, const uint8_t to[kMaxRules], uint64_t seq, uint64_t now) {
  ledger_.follow(prev, to, seq, now);
  held_.follow(to, now, ledger_);
}

void SvLoop::listener_drop(size_t i) {
  held_.drop_listener(trees_.listeners()[i].fd, ledger_);  // calls held from an ended tree: their tasks are gone
  trees_.listener_drop(i);
}

SupervisorStats SvLoop::run() {
  seccomp_notif* req = nullptr;
  seccomp_notif_resp* resp = nullptr;
  if (seccomp_notify_alloc(&req, &resp) != 0) return stats_;
  // A truncated segment must not kill the supervisor (SIGBUS): its service would then
  // see every limited call fail.
  shm_guard_register(&seg_.seg(), sizeof(ShmSegment));
  trees_.listener_add(first_fd_, ::fcntl(2, F_DUPFD_CLOEXEC, 3));
  std::vector<pollfd> fds;
  for (;;) {
    uint64_t now = mono_ns();
    lim_.fleet_lapse_check();  // held calls re-timed at the fallback even when no call comes
    held_.release_due(now, ledger_, handler_);
    if (now - last_sweep_ >= kSweepNs) {
      last_sweep_ = now;
      ledger_.sweep();
      pacer_.sweep(now);
    }
    // Joiners read the filter for the limits in force where it is published.
    lim_.refresh();
    trees_.publish();
    if (trees_.finished(now) && !trees_.drain_before_end()) break;
    fds.clear();
    size_t nl = 0, nj = 0;
    trees_.poll_fds(fds, nl, nj);
    uint64_t timeout_ns = held_.timeout(now, ledger_.orphan_wake(), fds);
    if (timed_.event_fd() >= 0) fds.push_back(pollfd{timed_.event_fd(), POLLIN, 0});  // reads made by workers
    timeout_ns = trees_.timeout(now, timeout_ns);
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
    int n = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (n < 0 && errno != EINTR) break;
    if (timed_.in_flight()) timed_.finish();
    trees_.serve(fds, nl, nj, n);
    if (n <= 0) continue;
    // One notification per listener and pass; a listener no task uses any more goes.
    for (size_t i = nl; i-- > 0;) {
      if (fds[i].revents & POLLIN) {
        int lfd = fds[i].fd;
        std::memset(req, 0, sizeof *req);
        errno = 0;
        int rc;
        {
          std::lock_guard lk(timed_.mem_mu());  // no worker writes into a target meanwhile (sv_timed_deliver)
          rc = seccomp_notify_receive(lfd, req);
        }
        if (rc == 0) {
          lim_.refresh();
          // Reads workers made and answered: charged before the next call of their threads.
          if (timed_.in_flight()) timed_.finish();
          handler_.handle(*req, lfd);
        } else if (errno == EBADF || errno == ENOTTY || errno == EINVAL) {
          listener_drop(i);  // not a listener: never spin on it
        }
      } else if (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) {
        listener_drop(i);
      }
    }
  }
  held_.clear();
  while (!trees_.listeners().empty()) listener_drop(trees_.listeners().size() - 1);
  timed_.stop();  // reads in flight: made, not answered (their tasks are gone), their descriptors closed
  trees_.close_joiners();
  trees_.unpublish();
  ledger_.drop_all();
  seccomp_notify_free(req, resp);
  stats_.deferred = held_.deferred();
  stats_.timed = timed_.timed();
  return stats_;
}

SupervisorStats supervise(int notify_fd, Segment& seg, const std::vector<int>& notified, bool strict,
                          SvServe serve) {
  SvLoop loop(notify_fd, seg, notified, strict, serve);
  return loop.run();
}

}  // namespace bonsai::ctl
