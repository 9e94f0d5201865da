// SPDX-License-Identifier: MIT
// The `fleet:` section of a service (issue 37, docs/fleet.md): the store, the lease
// period and an optional password file, each checked with its line and column. With
// it the service's limits are caps of the whole fleet, and its scope is `service`.
#include <fmt/core.h>

#include "abi/limit_parse.h"
#include "config/fleet_store.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

void fleet_load(const YAML::Node& node, const std::string& file, FleetConfig& out, std::vector<Diag>& diags) {
  out.present = true;
  if (!node.IsMap()) {
    diags.push_back(diag_at(file, node.Mark(), "'fleet' must be a mapping (store, period, password_file)"));
    return;
  }
  static const std::vector<std::string_view> kKeys = {"store", "period", "password_file"};
  bool has_store = false;
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    std::string text = v.IsScalar() ? v.Scalar() : "";
    if (key == "store") {
      has_store = true;
      FleetStore s;
      if (std::string p = fleet_store_parse(text, s); !p.empty()) diags.push_back(diag_at(file, v.Mark(), p));
      else out.store = text;
    } else if (key == "period") {
      uint64_t ns = 0;
      if (!duration_parse(text, ns) || ns < kFleetPeriodMinMs * 1'000'000 || ns > kFleetPeriodMaxMs * 1'000'000 ||
          ns % 1'000'000)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad period '{}' (whole milliseconds, {}ms to {}s)", text,
                                                            kFleetPeriodMinMs, kFleetPeriodMaxMs / 1000)));
      else out.period_ms = static_cast<uint32_t>(ns / 1'000'000);
    } else if (key == "password_file") {
      if (text.empty() || text[0] != '/' || text.size() >= kFleetPathMax)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad password_file '{}' (an absolute path, at most {} bytes)",
                                                            text, kFleetPathMax - 1)));
      else out.password_file = text;
    } else {
      std::string_view hint = closest_word(key, kKeys);
      diags.push_back(diag_at(file, kv.first.Mark(),
                              hint.empty() ? fmt::format("unknown key '{}' in fleet", key)
                                           : fmt::format("unknown key '{}' in fleet (did you mean '{}'?)", key, hint)));
    }
  }
  if (!has_store) diags.push_back(diag_at(file, node.Mark(), "'fleet' needs 'store: redis://HOST:PORT'"));
}

}  // namespace bonsai::ctl
