// SPDX-License-Identifier: MIT
// A fleet service's lease drawn for `stat` (table, --json, Prometheus): per
// host the grant, the lease's state, the fallbacks, the fleet-wide use, from the copy
// stat_snapshot made of the segment (FleetStat). `stat --fleet`, the fleet as Redis
// sees it, is fleet/fleet_view.h.
#pragma once
#include <string>
#include <vector>

#include "abi/limits_abi.h"
#include "stat/fleet_status.h"
#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

// The table's lines ("" when the service has no fleet).
// `service` (its name) adds, while no lease holds, one line of why (config/agent_log.h).
std::string fleet_table(const FleetStat& f, const LimitSet& limits, const std::string& service = "");

// The JSON document's "fleet" member as a JSON text ("" when none).
std::string fleet_json(const FleetStat& f);

// The Prometheus families of every fleet service in `services`; with the store node,
// the failovers and the fallback time from this user's agent's status file
// (fleet_status.h) for the services of the user running stat.
void fleet_prometheus(std::string& out, const std::vector<LabeledStat>& services);

// `stat --fleet`'s lines and JSON member ("agent") from the agent's status file:
// the primary store node, the last failover it saw, the time on the fallback.
std::string fleet_agent_status_table(const FleetAgentStatus& s);
std::string fleet_agent_status_json(const FleetAgentStatus& s);


}  // namespace bonsai::ctl
