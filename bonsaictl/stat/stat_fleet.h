// SPDX-License-Identifier: MIT
// A fleet service's lease in `stat` (table, --json, Prometheus; issue 37): per host the
// grant, the lease's state, the fallbacks, the fleet-wide use. Read from the segment
// (untrusted: strings cut at their bounds, counts as they are).
#pragma once
#include <string>
#include <vector>

#include "abi/fleet_abi.h"
#include "stat/stat_prometheus.h"
#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

// Copies the fleet block (`rules`: the limits' rule count) as of `mono_now`.
FleetStat fleet_snapshot(const ShmFleet& f, uint32_t rules, uint64_t mono_now);

// The table's lines ("" when the service has no fleet).
std::string fleet_table(const FleetStat& f, const LimitSet& limits);

// The JSON document's "fleet" member as a JSON text ("" when none).
std::string fleet_json(const FleetStat& f);

// The Prometheus families of every fleet service in `services`.
void fleet_prometheus(std::string& out, const std::vector<LabeledStat>& services);

// `stat --fleet SERVICE`: the fleet as the store sees it, printed. @return the exit status.
int stat_fleet_view(const std::string& service, bool json);

}  // namespace bonsai::ctl
