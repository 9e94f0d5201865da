// SPDX-License-Identifier: MIT
// The supervisor's trees and its join server (abi/sv_join.h): the service's later
// static and Go children hand their listeners to the supervisor already running for
// the service instead of starting one each. The server publishes the filter for the
// limits in force beside its socket (most joiners load it and hand their listener over
// without waiting for an answer), sends it to a connecting program of its own user and
// pid namespace (sv_rendezvous.h) that has not, and takes each joiner's listener and
// stderr; each listener is a tree of its own (Listener),
// answered on its own descriptor (Held::lfd); the supervisor's messages go to the
// newest tree's stderr. It owns the listeners, the programs joining, and when the
// supervisor may end (the last tree gone, kSvLingerNs idle when programs may join).
#pragma once
#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "supervisor/supervisor.h"
#include "supervisor/sv_view.h"

namespace bonsai::ctl {

// A tree's listener (the one the supervisor was started for, and those of programs that
// joined it), with the stderr of the program that handed it over: it holds none of an
// ended tree.
struct Listener {
  int fd = -1;
  int err_fd = -1;
};

// A program joining: its filter sent (or published), its listener awaited until `deadline`.
struct Joiner {
  int fd = -1;
  uint64_t deadline = 0;  // mono_ns
};
// How long a joiner that was sent the filter may take to hand its listener over (it
// loads the filter in between: a stopped or starved program may take long).
inline constexpr uint64_t kJoinerPatienceNs = 30'000'000'000;
// How long after the published filter was withdrawn a connection that gets no filter is
// kept: a program that read it just before may be about to hand its listener over.
inline constexpr uint64_t kReplyFreeWindowNs = 1'000'000'000;

class SvJoinServer {
 public:
  SvJoinServer(SvLimits& lim, SvServe serve) : lim_(lim), serve_(serve) {}
  void listener_add(int fd, int err_fd);
  // Closes listener `i` (its held calls dropped by the caller first).
  void listener_drop(size_t i);
  const std::vector<Listener>& listeners() const { return listeners_; }
  // No tree left: ended, unless programs may still join (then after kSvLingerNs idle).
  // Never with a joiner pending: it may have loaded the filter and be sending its listener.
  bool finished(uint64_t now) const;
  // The descriptors to poll: the listeners (from 0, `nl` of them), the join socket, the
  // joiners (from `nj`).
  void poll_fds(std::vector<pollfd>& fds, size_t& nl, size_t& nj) const;
  // The loop's sleep, shortened while idle (to the end of the linger) or a joiner is pending.
  uint64_t timeout(uint64_t now, uint64_t timeout_ns) const;
  // After the poll: joiners that sent their listener or hung up, or waited too long, go
  // (their entries leave `fds`); new programs accepted if `nl`'s socket is ready.
  void serve(std::vector<pollfd>& fds, size_t nl, size_t nj, int ready);
  // The end: every listener and joiner closed.
  void close_joiners();
  // Publishes the filter for the limits in force, if they moved since (cheap when not).
  void publish();
  // The loop found nothing left to serve: the socket is shut to new connections (they
  // start a supervisor of their own) and what is queued on it taken first -- a joiner
  // that published no listener yet, or handed one over unanswered, must not lose it.
  // @return true if that left something to serve (the loop goes on, serving no joiner).
  bool drain_before_end();
  // Removes the published filter if it is still the one this supervisor wrote.
  void unpublish();

 private:
  // Accepts what is queued (at most 16). @return true if more may be queued.
  bool join_accept();
  // Takes a listener queued on `fd`, if one is. @return true if it was taken.
  bool join_receive(int fd);
  // The filter for joining programs, for the limits in force (built once per sequence). @return false: none.
  bool join_filter();
  void stderr_follow();

  SvLimits& lim_;
  SvServe serve_;
  std::vector<Listener> listeners_;
  std::vector<Joiner> joiners_;
  uint64_t idle_since_ = 0;     // when the last tree ended (0: one runs)
  std::vector<char> join_bpf_;  // the filter joining programs load (header and instructions)
  uint64_t join_seq_ = 0;
  uint64_t published_seq_ = 0;  // the sequence of the published filter (0: none)
  dev_t published_dev_ = 0;     // the file it is (removed at the end only while still there)
  ino_t published_ino_ = 0;
  uint64_t unpublished_ns_ = 0;  // when the published filter was last withdrawn (mono_ns)
};

}  // namespace bonsai::ctl
