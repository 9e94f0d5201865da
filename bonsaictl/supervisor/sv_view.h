// SPDX-License-Identifier: MIT
// The supervisor's view of the service's limits: the limits in force, read from the
// segment and built as the library builds them (bucket/limits_view.h), the fleet
// fallback once a lease runs out (as runtime/fleet_lapse.h does), the share parameters
// of rules with a ceiling from the host segment (shm/shm_host.h), and the protect calls
// the supervisor times. It owns what it read and when; what follows a change (the
// threads' debts and places, the held calls) is told through SvViewFollower, so that
// each part re-numbers its own state. A truncated segment is said once and the limits
// in force stay (as in the library), with the supervisor's own buckets.
#pragma once
#include <cstdint>
#include <vector>

#include "abi/limits_abi.h"
#include "bucket/limits_view.h"
#include "bucket/pace_step.h"
#include "bucket/share.h"
#include "segment/shm_client.h"

namespace bonsai::ctl {

// The limits in force: the library's view, with the segment's sequence it came from.
struct SvView {
  LimitsView lim{};
  uint64_t seq = 0;
  bool usable = false;
  // Shares: per rule with a ceiling and a usable host capacity rule, its parameters
  // (host1 = 0: held to its rate), as of the host's capacity sequence `host_seq`.
  ShareParams share[kMaxRules]{};
  uint8_t host1[kMaxRules]{};
  uint64_t host_seq = 0;
  // The capacity rule of each, and the units/s of it held back for the user's containers
  // (shm/shm_siblings.h): share[].host is rebuilt when that moves.
  Rule cap[kMaxRules]{};
  uint64_t reserved[kMaxRules]{};
  // The bucket's parameters if `bucket` is one of the view's, else nullptr.
  const BucketParams* params(uint8_t bucket) const {
    return usable && bucket < lim.set.count ? &lim.params[bucket] : nullptr;
  }
};

// What follows the view: told when the segment is lost (its mapping zeroes now) and
// when new limits are in force (`to`: old bucket -> new bucket, kNoBucket where a rule
// went; `prev`: the view before).
class SvViewFollower {
 public:
  virtual void view_lost() = 0;
  virtual void view_changed(const LimitsView& prev, const uint8_t to[kMaxRules], uint64_t seq, uint64_t now) = 0;

 protected:
  ~SvViewFollower() = default;
};

class SvLimits {
 public:
  SvLimits(Segment& seg, std::vector<int> notified) : seg_(seg), notified_(std::move(notified)) {}
  void follow(SvViewFollower* f) { follower_ = f; }
  // Reads the limits again if the segment's sequence moved (cheap when it did not).
  void refresh();
  // Once the fleet lease has run out: the fallback rates installed (until the agent
  // writes limits again), even when no call comes.
  void fleet_lapse_check();
  const SvView& view() const { return view_; }
  const BucketParams* params(uint8_t bucket) const { return view_.params(bucket); }
  bool lost() const { return lost_; }
  // The segment's protect calls the supervisor times (kSvTimedCalls of them).
  CallMask protect_calls() const { return protect_calls_; }
  // A paced write's sharing rule: its host bucket and parameters for pace_take (none:
  // held to its rate); and units the host lent it, counted.
  PaceShare share_host(uint8_t bucket) const;
  void share_borrowed(uint8_t bucket, uint64_t units);

 private:
  // Installs `set` (the segment's limits of sequence `seq`, or, `from_segment` false,
  // the fleet fallback made of them): the followers re-number their state.
  void install(const LimitSet& set, uint64_t seq, bool from_segment);
  // The rules' share parameters from the host segment (again when its capacity changed).
  void shares_refresh();
  void say_unseen(const LimitSet& set);

  Segment& seg_;
  std::vector<int> notified_;  // what the filter notifies (fixed at launch)
  SvViewFollower* follower_ = nullptr;
  SvView view_;
  bool lost_ = false;            // the segment was truncated under us: its mapping is zeroes now
  bool fleet_fallback_ = false;  // the fleet fallback is in force (until the segment's limits change)
  bool said_fallback_ = false;
  bool said_shares_ = false;
  CallMask protect_calls_ = 0;
};

}  // namespace bonsai::ctl
