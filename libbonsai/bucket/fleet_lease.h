// SPDX-License-Identifier: MIT
// The arithmetic of fleet leases (docs/reference/fleet.md), shared by the library
// (the fallback it applies when a lease runs out) and bonsaictl's fleet agent (what a
// host asks for, the rate a grant means, what it repays after an outage). Pure
// functions: no clock, no syscalls, no allocation. The grant itself is computed in
// Redis (bonsaictl/fleet/fleet_script.cc) on the store's clock.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/limits_abi.h"

namespace bonsai {

// A host's fallback rate for a cap shared by `live` hosts: cap / live, at least 1
// (a fallback is never "unlimited" and never zero). live 0 (no grant yet: the store
// never counted the hosts) divides by `expected` (`fleet: expected_hosts:`;
// 0 counts as 1: the whole cap). The one place the library, the supervisor and
// bonsaictl (load/run write it as ShmFleet::fallback[], the agent after each grant)
// take a fallback from.
uint64_t fleet_fallback_rate(uint64_t cap, uint32_t live, uint32_t expected = 0) noexcept;

// The limits a host applies when its lease ran out: `in` with each rule's rate replaced
// by `fallback[r]` (read once, untrusted): a value of 0 keeps the rule's rate, and a
// value above the rule's cap (`cap[r]` when non-zero) is cut to the cap. Never
// removes a rule, never makes one unlimited. @return the number of rates changed.
uint32_t fleet_fallback_set(const LimitSet& in, const std::atomic<uint64_t>* cap,
                            const std::atomic<uint64_t>* fallback, LimitSet& out) noexcept;

// The rate (units/s, at least 1) that spends `granted` units over one period.
uint64_t fleet_grant_rate(uint64_t granted, uint64_t period_ns) noexcept;

// What a host measured over the last period, for one rule.
struct FleetDemand {
  double avg = 0;       // moving average of the units used per period
  bool primed = false;  // avg holds a measurement
};

// Inputs of one want.
struct FleetWantIn {
  uint64_t used;        // units used last period (the segment's counters)
  uint64_t backlog;     // units queued in the host's bucket (its clock ahead of now, at its rate)
  uint64_t granted;     // units the last grant gave (0: none yet)
  uint64_t cap_period;  // the fleet cap's units per period
  uint64_t min_want;    // what an idle host renews
};
// A used share of a grant at or above this (in percent) marks the host as held by its
// grant: its true demand is unknown, so it asks for the whole cap and the store's
// max-min share decides (a host below it asks for what it uses, with headroom).
inline constexpr uint64_t kFleetBusyPercent = 85;
inline constexpr uint64_t kFleetHeadroomPercent = 125;
// Updates `d` with the last period and @return the units to ask for the next one:
// held by its grant: the cap's period; else min(avg, last use) * headroom + backlog
// (rising demand averaged, falling demand given back at once); never below min_want,
// never above cap_period.
uint64_t fleet_want(FleetDemand& d, const FleetWantIn& in) noexcept;

// The units a host idle (or nearly) renews: 1/kFleetMinDivisor of an equal share of
// the cap among `live` hosts, at least 1.
inline constexpr uint64_t kFleetMinDivisor = 20;
uint64_t fleet_min_want(uint64_t cap_period, uint32_t live) noexcept;

// After an outage of `lapse_ns` during which the host used `used` units under a
// fallback of `fallback_rate` units/s: the excess it owes the fleet (0 if none).
uint64_t fleet_lapse_excess(uint64_t used, uint64_t fallback_rate, uint64_t lapse_ns) noexcept;

// The part of `owed` to repay with the next call: an excess is repaid over
// kFleetRepayPeriods periods (of at least 1 unit each), so one outage does not starve
// the fleet for a period.
inline constexpr uint64_t kFleetRepayPeriods = 4;
uint64_t fleet_repay_step(uint64_t owed, uint64_t owed_at_start) noexcept;

// The lease a grant gives: it runs out after kFleetLeasePeriods periods without a
// renewal (a late renewal on a busy machine does not drop the host into its fallback).
inline constexpr uint64_t kFleetLeasePeriods = 2;
inline uint64_t fleet_lease_expiry(uint64_t now_ns, uint64_t period_ns) noexcept {
  return now_ns + kFleetLeasePeriods * period_ns;
}

}  // namespace bonsai
