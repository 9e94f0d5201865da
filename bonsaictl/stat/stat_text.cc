// SPDX-License-Identifier: MIT
// The text of accounting (see stat_text.h).
#include "stat/stat_text.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace bonsai::ctl {

std::string human_bytes(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, kUnits[u]);
}

std::string rule_text_human(const std::string& rule) {
  std::string out;
  size_t at = 0;
  for (;;) {
    size_t eq = rule.find('=', at);
    if (eq == std::string::npos) break;
    size_t end = rule.find_first_not_of("0123456789", eq + 1);
    out += rule.substr(at, eq + 1 - at);
    at = eq + 1;
    if (end == std::string::npos || end == eq + 1 || rule.compare(end, 3, "B/s") != 0) continue;
    std::string digits = rule.substr(eq + 1, end - eq - 1);
    double v = digits.size() < 19 ? std::stod(digits) : 0;
    if (v < 1024) continue;
    static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    int u = -1;
    while (v >= 1024 && u < 3) v /= 1024, ++u;
    out += fmt::format("~{:.1f}{}", v, kUnits[u]);
    at = end + 1;  // past the 'B': "/s" follows
  }
  return out + rule.substr(at);
}

std::string human_ns(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000'000) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

std::string version_text(uint32_t code) {
  if (code == 0) return "unknown";
  return fmt::format("{}.{}.{}", code >> 16, (code >> 8) & 0xff, code & 0xff);
}

std::string json_escape(const std::string& s) {
  // nlohmann's own escaping; bytes that are not UTF-8 (a name read from an untrusted
  // segment) become U+FFFD instead of an exception.
  std::string q = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

std::string prom_label_escape(const std::string& v) {
  std::string out;
  for (char ch : v) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

}  // namespace bonsai::ctl
