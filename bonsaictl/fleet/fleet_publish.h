// SPDX-License-Identifier: MIT
// What `run` and `load` do for a service's `fleet:`: keep its configuration
// where only the user can write (the agent's), the caps in its segment, publish the starting limits (the fallback:
// the cap / the hosts last seen live, or / expected_hosts), and start a fleet agent for
// the namespace when none holds its lock.
#pragma once
#include <string>

#include "segment/shm_client.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

// The fleet agent's lock for this host namespace (BONSAI_SHM_PREFIX and uid): the file
// `lock` in a directory of its own, /dev/shm/<prefix>bonsai-fleet.<uid>.d, that only
// the user can write (another user cannot create, hold or replace it).
std::string fleet_lock_dir();
std::string fleet_lock_path();

// Opens (creating, mode 0700 / 0600) the lock, refusing a directory or file that is
// not the effective user's own, has group or other bits, or is a symlink (someone
// squatting the name). @return the lock file's descriptor, or -1 with `why` (one line
// that says what to do).
int fleet_lock_open(std::string& why);

// Writes `svc`'s trusted fleet configuration (config/fleet_trusted.h; removes it when
// the service has no `fleet:`) and its segment's fleet block -- the flag, the caps and
// the fallback, which the library reads; the store, password file, namespace, period
// and expected hosts empty: nothing a privileged reader takes from a segment -- and
// @return the limits to publish: the caps as they are, or, for a fleet service, at the
// fallback rate (cap / the hosts last seen live; before any grant cap / expected_hosts).
// A trusted file that cannot be written sets `problem` (if empty): no agent will serve
// the service, the caller fails (exit 1). A fleet service with --user is a usage error.
LimitSet fleet_publish(Segment& seg, const ServiceConfig& svc, std::string& problem);

// Starts `bonsaictl fleet-agent --exit-when-idle` in the background (its own session,
// output to /dev/null) unless an agent holds the namespace's lock, and waits (up to
// 5 s) for it to say it holds the lock. @return true with `msg` a line to print ("" if
// nothing was started), or false with `msg` why no agent runs: the caller fails loudly
// (exit 1), since the fleet service would wait at its fallback with nobody leasing.
bool fleet_agent_ensure(std::string& msg);

// The started agent's half (cmd_fleet_agent): the descriptor named by
// BONSAI_FLEET_READY_FD (-1 if none; the variable is removed), and the one line it
// tells (`ok` or why it cannot serve), closing it.
int fleet_ready_fd_take();
void fleet_ready_tell(int& fd, const std::string& line);

}  // namespace bonsai::ctl
