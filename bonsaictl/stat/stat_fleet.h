// SPDX-License-Identifier: MIT
// A fleet service's lease drawn for `stat` (table, --json, Prometheus; issue 37): per
// host the grant, the lease's state, the fallbacks, the fleet-wide use, from the copy
// stat_snapshot made of the segment (FleetStat). `stat --fleet`, the fleet as Redis
// sees it, is fleet/fleet_view.h.
#pragma once
#include <string>
#include <vector>

#include "abi/limits_abi.h"
#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

// The table's lines ("" when the service has no fleet).
std::string fleet_table(const FleetStat& f, const LimitSet& limits);

// The JSON document's "fleet" member as a JSON text ("" when none).
std::string fleet_json(const FleetStat& f);

// The Prometheus families of every fleet service in `services`.
void fleet_prometheus(std::string& out, const std::vector<LabeledStat>& services);


}  // namespace bonsai::ctl
