// SPDX-License-Identifier: MIT
// `bonsaictl stat --fleet SERVICE`: the fleet as the store sees it -- every
// live host, when it last called, what it asked for and used last period, per rule --
// read from Redis with the service's store and password (its segment names them).
#pragma once
#include <string>

namespace bonsai::ctl {

// Prints the fleet of `service` (a table, or JSON with `json`). @return the exit status.
int stat_fleet_view(const std::string& service, bool json);

}  // namespace bonsai::ctl
