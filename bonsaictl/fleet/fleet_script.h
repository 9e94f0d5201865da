// SPDX-License-Identifier: MIT
// The one Lua script the fleet agent runs in Redis (docs/fleet.md): a lease per host
// per service per period, on the store's own clock (TIME), so host clocks never enter.
#pragma once
#include <string>
#include <string_view>

namespace bonsai::ctl {

// The script's text (loaded once with SCRIPT LOAD, called with EVALSHA).
// KEYS[1]: the service's key prefix (fleet_key_prefix).
// ARGV: host id, period (µs), rule count n, then per rule: cap (units/s), want, used
// last period, repay (units).
// @return {live hosts, then per rule: granted units, units the live hosts used last period}.
extern const std::string_view kFleetLeaseScript;

// "bonsai:fleet:{SERVICE}:": every key of one service shares a hash slot (the braces).
std::string fleet_key_prefix(std::string_view service);

}  // namespace bonsai::ctl
