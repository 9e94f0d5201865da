// SPDX-License-Identifier: MIT
// Where a fleet's Redis lives: `redis://[USER@]HOST:PORT` or `redis+unix:///PATH` (docs/fleet.md).
// Shared by the YAML loader (which checks it) and the fleet agent (which connects).
#pragma once
#include <string>
#include <string_view>

namespace bonsai::ctl {

struct FleetStore {
  std::string host;  // TCP: a name, an IPv4 address or an IPv6 one (without brackets)
  int port = 0;      // TCP port; 0 for a Unix socket
  std::string unix_path;  // redis+unix: the socket's path
  std::string user;       // redis://USER@HOST:PORT: an ACL user (AUTH USER PASSWORD); "": AUTH PASSWORD (default)
};

// Parses `url`. @return "" with `out` filled, or what is wrong (one line).
std::string fleet_store_parse(std::string_view url, FleetStore& out);

}  // namespace bonsai::ctl
