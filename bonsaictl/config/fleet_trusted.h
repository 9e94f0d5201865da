// SPDX-License-Identifier: MIT
// The trusted fleet configuration (docs/reference/fleet.md "Where the agent takes its
// configuration"): what `load` and `run` keep, per fleet service, for the fleet agent
// and `stat --fleet` -- the store, the password files, the namespace, the period, the
// expected hosts and the rules whose rates are the fleet caps -- in a file of the
// user's own directory /dev/shm/<prefix>bonsai-fleet.<uid>.d (0700, checked as the
// agent's lock is), never in the service's segment, which its tenants can write.
// A file names the segment file (device, inode) it was written for: a segment removed
// and made again by anything but `load`/`run` of a fleet service is not served.
#pragma once
#include <string>
#include <vector>

#include "abi/limits_abi.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

struct FleetTrusted {
  std::string service;
  FleetConfig fleet;              // store, period_ms, the password files, fleet_namespace, expected_hosts
  LimitSet rules{};               // the service's rules as configured: each rate is its fleet cap
  uint64_t seg_dev = 0, seg_ino = 0;  // the segment file it belongs to (0: any, the agent's -c FILE)
  std::string text;               // the file as read (a change is a new `load`)
};

// The user's fleet directory (ctl_uid()): the agent's lock and the trusted files.
std::string fleet_dir();

// Opens fleet_dir() (creating it when `create`; owned by ctl_uid(), mode 0700, no symlink).
// @return its descriptor or -1 with `why`.
int fleet_dir_open(bool create, std::string& why);

// From a service of a file (the agent's -c FILE): the segment is not named.
FleetTrusted fleet_trusted_of(const ServiceConfig& svc);

// Writes `svc`'s trusted file for the segment open as `seg_fd` (atomically: a temporary
// file renamed over the old). @return "" or why not (one line).
std::string fleet_trusted_write(const ServiceConfig& svc, int seg_fd);

// Removes `service`'s trusted file, if any (the service has no `fleet:` any more).
void fleet_trusted_remove(const std::string& service);

// Reads `service`'s trusted file. @return 1 with `out` filled, 0 when there is none, -1
// with `why` when it cannot be trusted or used (another user's, a bad line).
int fleet_trusted_read(const std::string& service, FleetTrusted& out, std::string& why);

// The services that have a trusted file, sorted; `why` says why none can be read.
std::vector<std::string> fleet_trusted_list(std::string& why);

// Whether the segment open as `seg_fd` is the one `t` was written for.
bool fleet_trusted_matches(const FleetTrusted& t, int seg_fd);

}  // namespace bonsai::ctl
