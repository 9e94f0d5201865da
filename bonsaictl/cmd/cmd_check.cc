// SPDX-License-Identifier: MIT
// `bonsaictl check FILE...`: validate configuration files, every problem as
// FILE:LINE:COL: message. Changes nothing.
#include <fmt/core.h>

#include "cmd/commands.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {
namespace {

int cmd_check(const Args& args) {
  if (args.empty()) usage_error("no FILE given");
  int status = kExitOk;
  for (const auto& file : args) {
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
  }
  return status;
}

}  // namespace

extern const Command kCmdCheck{"check", "check FILE...",
                               "Validates YAML configuration files (see docs/config.md) and changes nothing.\n"
                               "Each problem is printed as FILE:LINE:COL: message.\n"
                               "exit status: 0 all valid, 2 a file has errors\n",
                               cmd_check};

}  // namespace bonsai::ctl
