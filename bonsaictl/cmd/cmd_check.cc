// SPDX-License-Identifier: MIT
// `bonsaictl check FILE...`: validate configuration files, every problem as
// FILE:LINE:COL: message. Changes nothing.
#include <fmt/core.h>

#include "abi/limit_parse.h"
#include "bucket/fleet_lease.h"
#include "cmd/commands.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {
namespace {

// What a fleet service's hosts do before their first grant: the fallback
// `load` publishes, cap / expected_hosts, or the whole cap on every host.
std::string fleet_explain(const ServiceConfig& s) {
  const FleetConfig& f = s.fleet;
  std::string rates;
  for (uint32_t r = 0; r < s.limits.count; ++r) {
    Rule rule = s.limits.rules[r];
    rule_set_rate(rule, fleet_fallback_rate(rule.rate, 0, f.expected_hosts));
    char buf[256];
    rule_format(rule, buf, sizeof buf);
    rates += fmt::format("{}{}", r ? ", " : "", buf);
  }
  std::string out = fmt::format("  {}: fleet caps through {} (namespace {}), a lease every {} ms\n", s.name, f.store,
                                f.fleet_namespace.empty() ? "default" : f.fleet_namespace, f.period_ms);
  if (f.expected_hosts)
    out += fmt::format("  {}: before its first grant (the store never reached) each host runs at the cap / {} "
                       "(expected_hosts): {}\n", s.name, f.expected_hosts, rates);
  else
    out += fmt::format("  {}: before its first grant (the store never reached) each host runs at the whole cap: N such "
                       "hosts hold N x the cap; set expected_hosts: N for cap / N\n", s.name);
  return out;
}

int cmd_check(const Args& args) {
  CliParsed p = options_parse(args, {});
  std::vector<std::string> files = p.words;
  files.insert(files.end(), p.rest.begin(), p.rest.end());
  if (files.empty()) usage_error("no FILE given");
  int status = kExitOk;
  for (const auto& file : files) {
    std::vector<Diag> diags;
    Config cfg = yaml_load_file(file, diags);
    if (!diags.empty()) {
      diags_print(diags);
      status = kExitUsage;
      continue;
    }
    std::string names;
    for (const auto& s : cfg.services) names += (names.empty() ? "" : ", ") + s.name;
    fmt::print("{}: ok ({} service{}{}{})\n", file, cfg.services.size(), cfg.services.size() == 1 ? "" : "s",
               names.empty() ? "" : ": ", names);
    for (const auto& s : cfg.services)
      if (s.fleet.present) fmt::print("{}", fleet_explain(s));
  }
  return status;
}

}  // namespace

extern const Command kCmdCheck{"check", "check FILE...",
                               "Validates YAML configuration files (see docs/reference/config.md) and changes nothing.\n"
                               "Each problem is printed as FILE:LINE:COL: message.\n",
                               {},
                               "exit status: 0 all valid, 2 a file has errors\n",
                               cmd_check};

}  // namespace bonsai::ctl
