// SPDX-License-Identifier: MIT
// Where a fleet's Redis lives: `redis://[USER@]HOST:PORT`, `redis+unix:///PATH`, or
// `redis+sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER_NAME` (the Sentinels that
// know which node is the primary; docs/reference/fleet.md). Shared by the YAML loader (which
// checks it) and the fleet agent (which connects).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::ctl {

struct FleetHostPort {
  std::string host;  // a name, an IPv4 address or an IPv6 one (without brackets)
  int port = 0;
};

inline constexpr size_t kFleetSentinelsMax = 16;
inline constexpr size_t kFleetMasterNameMax = 64;

struct FleetStore {
  std::string host;  // TCP: a name, an IPv4 address or an IPv6 one (without brackets)
  int port = 0;      // TCP port; 0 for a Unix socket
  std::string unix_path;  // redis+unix: the socket's path
  std::string user;       // USER@: an ACL user (AUTH USER PASSWORD); "": AUTH PASSWORD (default)
  // redis+sentinel: the Sentinels, asked in this order, and the name they know the
  // primary by (host and port stay empty: the Sentinels say where the primary is).
  std::vector<FleetHostPort> sentinels;
  std::string master_name;
  bool sentinel() const { return !sentinels.empty(); }
};

// Parses `url`. @return "" with `out` filled, or what is wrong (one line).
std::string fleet_store_parse(std::string_view url, FleetStore& out);

// Checks a HOST:PORT or [IPV6]:PORT (a Sentinel's answer too). @return "" or what is wrong.
std::string fleet_host_port_parse(std::string_view text, FleetHostPort& out);

// "HOST:PORT", "[IPV6]:PORT" for an address with a colon.
std::string fleet_host_port_text(const FleetHostPort& hp);

}  // namespace bonsai::ctl
