// SPDX-License-Identifier: MIT
// One fleet service as the fleet agent serves it (docs/reference/fleet.md): each
// period it measures the host's use, asks the store for a lease (fleet_script.h) and
// publishes the grant as the host's limits through the live-limit path
// (Segment::write_limits: buckets keep their state), the lease's expiry first. When
// the store does not answer, the lease runs out and the library falls back on its own
// (libbonsai/runtime/fleet_lapse.h); on recovery the excess used meanwhile is repaid.
// Its configuration (store, password file, namespace, period, caps, rules) is the
// trusted one (config/fleet_trusted.h), never the segment's: what the agent reads back
// from the segment (counters, the bucket's backlog) a tenant can forge, and is bounded
// by the trusted caps.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "abi/shm_abi.h"
#include "bucket/fleet_lease.h"
#include "config/fleet_trusted.h"
#include "fleet/fleet_redis.h"
#include "stat/fleet_status.h"
#include "segment/shm_client.h"

namespace bonsai::ctl {

class FleetService {
 public:
  // `token`: this agent's own (random per start): the store tells two agents with one
  // host id apart by it (fleet_script.h).
  FleetService(std::unique_ptr<Segment> seg, FleetTrusted trusted, std::string host_id, std::string token);
  const std::string& name() const { return seg_->service(); }
  const FleetTrusted& trusted() const { return trusted_; }
  Segment& segment() { return *seg_; }
  // When the next lease call is due (bonsaictl's CLOCK_MONOTONIC).
  uint64_t next_ns() const { return next_ns_; }
  // One period: measure, ask, publish. Problems are said once each (until they clear).
  void step(uint64_t now_ns);

 private:
  void usage_read(const LimitSet& rules, std::array<uint64_t, kMaxRules>& total);
  void publish(const LimitSet& rules, const std::array<uint64_t, kMaxRules>& caps, const LeaseReply& r,
               uint64_t now_ns, uint64_t period_ns);
  void on_failure(const std::string& why, uint64_t now_ns);
  void say(const std::string& what);

  std::unique_ptr<Segment> seg_;
  FleetTrusted trusted_;
  std::array<uint64_t, kMaxRules> caps_{};  // the trusted rules' rates
  std::string host_id_, token_;
  RedisConn redis_;
  FleetStatusFile status_;       // the store node, failovers and fallback time, beside the segment
  bool clash_ = false;           // the store reports another agent with this host id
  uint32_t live_ = 0;            // live hosts, as the store last counted them
  uint64_t next_ns_ = 0;
  uint64_t expiry_ns_ = 0;       // the lease published (0: none yet)
  bool lapsed_ = false;
  uint64_t lapse_start_ns_ = 0;
  bool primed_ = false;          // last_total_ holds a reading
  std::string said_;             // the last problem said (said once until it changes)
  std::array<uint64_t, kMaxRules> last_total_{}, granted_{}, owed_{}, owed_start_{}, lapse_used_{}, fallback_{};
  std::array<FleetDemand, kMaxRules> demand_{};
};

}  // namespace bonsai::ctl
