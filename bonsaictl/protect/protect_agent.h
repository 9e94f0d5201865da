// SPDX-License-Identifier: MIT
// The protect controller, the room of `bonsaictl protect-agent` (docs/reference/protect.md): it
// keeps the p99 of each `protect:` service of a configuration at its target by moving
// the rates of the services it squeezes between their floors and their configured
// rates, from the durations the protected service's processes (or its supervisor)
// record in its segment. It runs in the foreground until a signal or its time is up,
// and gives the squeezed services their configured rates back when it ends.
#pragma once
#include <cstdint>
#include <string>

#include "config/yaml_load.h"

namespace bonsai::ctl {

struct ProtectAgentOptions {
  uint32_t period_ms = 250;  // a decision every period
  uint64_t for_s = 0;        // stop after this many seconds (0: until SIGINT or SIGTERM)
};

// Serves the `protect:` services of `cfg` (read from `file`, named in messages).
// @return the exit status: kExitOk stopped, kExitRuntime no protected service left to
// serve. Throws CtlError: a segment cannot be opened (runtime), another agent serves a
// service (runtime), no service has `protect:` (usage).
int protect_agent_run(const Config& cfg, const std::string& file, const ProtectAgentOptions& opt);

}  // namespace bonsai::ctl
