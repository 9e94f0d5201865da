// SPDX-License-Identifier: MIT
// Rendering of ServiceStat: one JSON document per service (docs/reference/stat-json.md) and
// a table with units for people.
#pragma once
#include <string>

#include "stat/stat_snapshot.h"
#include "stat/stat_text.h"  // the units and escapes of every rendering

namespace bonsai::ctl {

// One line of JSON, no trailing newline. Calls with no activity are left out.
std::string stat_json(const ServiceStat& s);

// A multi-line table ending in a newline.
std::string stat_table(const ServiceStat& s);


}  // namespace bonsai::ctl
