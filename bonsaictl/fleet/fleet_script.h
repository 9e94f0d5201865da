// SPDX-License-Identifier: MIT
// The one Lua script the fleet agent runs in Redis (docs/reference/fleet.md): a lease per host
// per service per period, on the store's own clock (TIME), so host clocks never enter.
#pragma once
#include <string>
#include <string_view>

namespace bonsai::ctl {

// The script's text (loaded once with SCRIPT LOAD, called with EVALSHA).
// KEYS[1]: the service's key prefix (fleet_key_prefix).
// ARGV: host id, the agent's token (random per start: a second agent with the same
// host id is told apart by it), period (µs), rule count n, then per rule: cap
// (units/s), want, used last period, repay (units).
// @return {live hosts, 1 if another agent called with this host id within thirty periods
// else 0, then per rule: granted units, units the live hosts used last period}.
extern const std::string_view kFleetLeaseScript;

// "bonsai:fleet:{SERVICE}:" in the default namespace (the keys before namespaces existed),
// "bonsai:fleet:NAMESPACE:{SERVICE}:" in another: every key of one service shares a
// hash slot (the braces), and an ACL key pattern ~bonsai:fleet:NAMESPACE:* holds one
// namespace (~bonsai:fleet:{* the default one).
std::string fleet_key_prefix(std::string_view fleet_namespace, std::string_view service);

}  // namespace bonsai::ctl
