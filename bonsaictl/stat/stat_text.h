// SPDX-License-Identifier: MIT
// The text of accounting, shared by every rendering (tables, JSON, Prometheus, top,
// ls): sizes and durations with units, versions, and the escapes strings from an
// untrusted segment need in JSON and in Prometheus labels.
#pragma once
#include <cstdint>
#include <string>

namespace bonsai::ctl {

// "1.50 MiB", "312 B".
std::string human_bytes(double bytes);
// A rule as `ls` shows it: a byte rate that no unit divides (a fleet's grant,
// 209712B/s) as "~204.8KiB/s"; every other text as rule_format wrote it.
std::string rule_text_human(const std::string& rule);
// "12.0 ms" for nanoseconds.
std::string human_ns(uint64_t ns);
// "0.2.0" from a slot's version_code(); "unknown" for 0.
std::string version_text(uint32_t code);
// A JSON string's contents (nlohmann-json: valid UTF-8 kept, invalid bytes as U+FFFD,
// controls escaped).
std::string json_escape(const std::string& s);
// A Prometheus label value escaped as the text format requires (\\, \", \n).
std::string prom_label_escape(const std::string& v);

}  // namespace bonsai::ctl
