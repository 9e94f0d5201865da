// SPDX-License-Identifier: MIT
// `bonsaictl protect-agent FILE [--period MS] [--for SECONDS]` (docs/reference/protect.md): the
// options and FILE checked here; the controller of FILE's `protect:` services is the
// protect room's (protect/protect_agent.h).
#include <cstdlib>
#include <fmt/core.h>
#include <vector>

#include "cmd/commands.h"
#include "config/owned_file.h"
#include "config/yaml_load.h"
#include "protect/protect_agent.h"
#include "segment/target_user.h"

namespace bonsai::ctl {
namespace {

constexpr uint32_t kPeriodMinMs = 50, kPeriodMaxMs = 10'000, kPeriodDefaultMs = 250;

constexpr CliOption kOptions[] = {
    {"--period", OptArg::Required, "MS", "a decision every MS milliseconds (default 250, 50 to 10000)"},
    {"--for", OptArg::Required, "SECONDS", "stop after SECONDS"},
};

int cmd_protect_agent(const Args& args) {
  CliParsed opt = options_parse(args, kOptions);
  std::vector<std::string> files = opt.words;
  files.insert(files.end(), opt.rest.begin(), opt.rest.end());
  if (files.size() > 1) usage_error(fmt::format("unexpected argument '{}'", files[1]));
  if (files.empty()) usage_error("protect-agent needs a FILE");
  std::string file = files[0];
  uint32_t period_ms = kPeriodDefaultMs;
  uint64_t for_s = 0;
  if (opt.has("--period")) {
    std::string v = opt.value("--period");
    char* end = nullptr;
    unsigned long ms = std::strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end || v[0] == '-' || ms < kPeriodMinMs || ms > kPeriodMaxMs)
      usage_error(fmt::format("bad --period '{}' (milliseconds, {} to {})", v, kPeriodMinMs, kPeriodMaxMs));
    period_ms = static_cast<uint32_t>(ms);
  }
  if (opt.has("--for")) {
    std::string v = opt.value("--for");
    char* end = nullptr;
    unsigned long s = std::strtoul(v.c_str(), &end, 10);
    if (v.empty() || *end || v[0] == '-' || s < 1 || s > 31'536'000)
      usage_error(fmt::format("bad --for '{}' (seconds, >= 1)", v));
    for_s = s;
  }
  // It rewrites the squeezed services' limits: as its own user, in its own user's
  // segments, from a file only that user can write.
  if (ctl_other_user())
    usage_error("protect-agent serves its own user's services: run it as that user, not with --user");
  std::vector<Diag> diags;
  Config cfg = yaml_load_owned(file, diags);
  if (!diags.empty()) {
    diags_print(diags);
    return kExitUsage;
  }
  return protect_agent_run(cfg, file, ProtectAgentOptions{period_ms, for_s});
}

}  // namespace

extern const Command kCmdProtectAgent{
    "protect-agent", "protect-agent FILE [--period MS] [--for SECONDS]",
    "Keeps the p99 of each `protect:` service of FILE (see docs/reference/protect.md) at its\n"
    "target: every period (default 250 ms, 50 to 10000) it reads the protected calls'\n"
    "durations and lowers the rates of the services it squeezes while the p99 is\n"
    "above the target (in proportion to the overshoot, at most by half, down to\n"
    "their floors), and raises them back while it is well within (a few percent\n"
    "a period; doubling when the protected service is idle).\n"
    "Run FILE's `load` first. On exit the squeezed services get their configured\n"
    "rates back.\n",
    kOptions,
    "exit status: 0 stopped, 1 a segment could not be opened, 2 invalid FILE\n",
    cmd_protect_agent};

}  // namespace bonsai::ctl
