// SPDX-License-Identifier: MIT
// Rendering of ServiceStat: one JSON document per service (docs/stat-json.md) and
// a table with units for people.
#pragma once
#include <string>

#include "stat/stat_snapshot.h"

namespace bonsai::ctl {

// One line of JSON, no trailing newline. Calls with no activity are left out.
// "0.2.0" from a slot's version_code(); "unknown" for 0.
std::string version_text(uint32_t code);

std::string stat_json(const ServiceStat& s);

// A multi-line table ending in a newline.
std::string stat_table(const ServiceStat& s);

// "1.50 MiB", "312 B"; "12.0 ms" for nanoseconds; a JSON string's contents (nlohmann-json:
// valid UTF-8 kept, invalid bytes as U+FFFD, controls escaped).
std::string human_bytes(double bytes);
std::string human_ns(uint64_t ns);
std::string json_escape(const std::string& s);

}  // namespace bonsai::ctl
