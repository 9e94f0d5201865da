// SPDX-License-Identifier: MIT
// What `run` and `load` do for a service's `fleet:` (issue 37): write the fleet block
// (store, period, caps) into its segment, publish the starting limits (the fallback:
// the cap / the hosts last seen live), and start a fleet agent for the namespace when
// none holds its lock.
#pragma once
#include <string>

#include "segment/shm_client.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

// The fleet agent's lock file for this namespace (BONSAI_SHM_PREFIX and uid).
std::string fleet_lock_path();

// Writes `svc`'s fleet block (or clears it when the service has none) and @return the
// limits to publish: the caps as they are, or, for a fleet service, at the fallback rate.
LimitSet fleet_publish(Segment& seg, const ServiceConfig& svc);

// Starts `bonsaictl fleet-agent --exit-when-idle` in the background (its own session,
// output to /dev/null) unless an agent holds the namespace's lock. @return a line to
// print ("" if nothing was started).
std::string fleet_agent_ensure();

}  // namespace bonsai::ctl
