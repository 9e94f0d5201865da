// SPDX-License-Identifier: MIT
// The logs of the agents `load` starts (fleet-agent, protect-agent): `AGENT.log` in the
// user's trusted directory (fleet_dir(): owned by the user, 0700, no symlink; checked on
// what was opened, as the fleet lock's), kept to about 1 MiB (one older file,
// `AGENT.log.1`). Where an operator looks when a controller does not work: `load` prints
// the path, plain `stat` names it and says in one line why the controller is not working.
#pragma once
#include <string>

namespace bonsai::ctl {

// The path of `agent`'s log ("fleet-agent", "protect-agent").
std::string agent_log_path(const std::string& agent);

// Opens `agent`'s log to append to (the directory made and checked first, the file
// opened without following a symlink). @return the descriptor, or -1 with `why`.
int agent_log_open(const std::string& agent, std::string& why);

// The last line of `agent`'s log ("" if there is none or it cannot be trusted).
std::string agent_log_last(const std::string& agent);

// Why the fleet controller of `service` does not work, in one line (without reaching
// its store): no agent alive (`agent_pid` 0 or gone), no trusted configuration, a
// password file the agent cannot read (named), else the agent log's last line. "" if
// nothing is known to be wrong.
std::string fleet_not_working(const std::string& service, int agent_pid);

}  // namespace bonsai::ctl
