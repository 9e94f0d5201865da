// SPDX-License-Identifier: MIT
// What the fleet agent knows beside the segment (the segment's layout stays as it
// is): per fleet service, which store node is the primary, the last failover it saw,
// and how long this host ran on its fallback. A small file per service,
// `status.SERVICE`, in the agent's own directory (/dev/shm/<prefix>bonsai-fleet.<uid>.d,
// 0700, checked as fleet_lock_open checks it, opened with O_NOFOLLOW inside it); `stat
// --fleet` and Prometheus read it. Read back bounded and checked: a file that is not
// the user's own, too big or malformed is no status.
#pragma once
#include <cstdint>
#include <string>

namespace bonsai::ctl {

// Which store node the connection is on and the failovers it has seen (the agent
// writes it to its status file).
struct StoreNodeStatus {
  std::string primary;        // HOST:PORT (or the socket) of the node in use; "" while none answers
  std::string sentinel;       // the Sentinel that named it ("" for a plain store)
  uint64_t failovers = 0;     // times the primary the Sentinels named changed
  uint64_t last_failover_unix_ns = 0;
  std::string last_from, last_to, last_reason;  // reason: what made the agent ask again
};

// The agent's directory, as fleet_lock_dir() (fleet/fleet_publish.h) names it:
// /dev/shm/<prefix>bonsai-fleet.<uid>.d (a unit test holds the two equal).
std::string fleet_status_dir();

struct FleetAgentStatus {
  StoreNodeStatus node;
  uint64_t fallback_total_ms = 0;       // time on the fallback, the current episode included at written_unix_ns
  uint64_t fallback_last_ms = 0;        // the last finished episode
  uint64_t fallback_since_unix_ns = 0;  // 0: not on the fallback now
  uint64_t written_unix_ns = 0;
  int agent_pid = 0;
};

// The agent's side: tracks the fallback episodes (the lease lapsed until the next
// grant) and rewrites the file when something changed, else at most once a second.
class FleetStatusFile {
 public:
  // `lapsed`: the host's lease ran out at `lapse_start_mono_ns` and no grant came since.
  void update(const std::string& service, const StoreNodeStatus& node, bool lapsed, uint64_t lapse_start_mono_ns,
              uint64_t now_mono_ns);

 private:
  FleetAgentStatus st_;
  uint64_t since_mono_ns_ = 0;  // the current episode's start (0: none)
  uint64_t written_mono_ns_ = 0;
  std::string last_text_;
};

// Reads the status of `service` written by this user's agent of this host namespace.
// @return false when there is none (no agent wrote one, or it is damaged).
bool fleet_status_read(const std::string& service, FleetAgentStatus& out);

}  // namespace bonsai::ctl
