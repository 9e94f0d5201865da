// SPDX-License-Identifier: MIT
// A service's fleet block: when its limits are a share of a cap held by many
// hosts through Redis. bonsaictl (`run`/`load`) writes the configuration, the fleet
// agent the lease; the library reads only the lease expiry and the fallback rates, and
// trusts neither. Layout only. Bump BONSAI_ABI_VERSION on any change.
#pragma once
#include <atomic>
#include <cstdint>

#include "abi/limits_abi.h"

namespace bonsai {

inline constexpr uint32_t kFleetStoreMax = 128;   // "redis://HOST:PORT" or "redis+unix:///path", NUL-terminated
inline constexpr uint32_t kFleetPathMax = 128;    // the password file's path
inline constexpr uint32_t kFleetHostIdMax = 64;   // --host-id
inline constexpr uint32_t kFleetNamespaceMax = 64; // `fleet: namespace:`, NUL-terminated

// The agent's view of the lease (stat shows it).
enum class FleetState : uint32_t {
  Waiting = 0,   // no grant yet: the limits are as `load`/`run` wrote them (the whole cap)
  Leased = 1,    // the limits are the last grant; the lease runs to lease_expiry_ns
  Fallback = 2,  // the store did not answer in time: the library runs at fallback[]
};

struct alignas(64) ShmFleet {
  // ---- read by the library (slow path only) ----
  std::atomic<uint64_t> lease_expiry_ns;  // host CLOCK_MONOTONIC; 0: no lease (limits apply as written)
  std::atomic<uint64_t> lib_fallbacks;    // times a process found the lease run out and fell back
  std::atomic<uint64_t> fallback[kMaxRules];  // per rule, units/s: the cap / live hosts (0: keep the rate)
  // ---- written by bonsaictl run/load ----
  std::atomic<uint32_t> enabled;          // 1: the limits are this host's grants of fleet caps
  std::atomic<uint32_t> period_ms;        // lease period, 50..10000
  char store[kFleetStoreMax];
  char password_file[kFleetPathMax];      // "" : no AUTH
  std::atomic<uint64_t> cap[kMaxRules];   // per rule, units/s: the fleet-wide cap
  // ---- written by the fleet agent ----
  std::atomic<int32_t> agent_pid;
  std::atomic<uint32_t> state;            // FleetState
  std::atomic<uint32_t> live_hosts;       // as the store last counted them
  std::atomic<uint32_t> id_clash;         // 1: the store saw another agent call with this host id lately
  std::atomic<uint64_t> renewals;         // leases granted
  std::atomic<uint64_t> failures;         // calls to the store that failed or timed out
  std::atomic<uint64_t> lapses;           // times the lease ran out (the agent saw it)
  std::atomic<uint64_t> last_grant_unix_ns;
  char host_id[kFleetHostIdMax];
  std::atomic<uint64_t> grant[kMaxRules];       // units granted for the current period
  std::atomic<uint64_t> want[kMaxRules];        // units asked for it
  std::atomic<uint64_t> fleet_used[kMaxRules];  // units per period, all live hosts (last reports)
  std::atomic<uint64_t> owed[kMaxRules];        // excess used during an outage, still to repay
  // ---- written by bonsaictl run/load ----
  char fleet_namespace[kFleetNamespaceMax];     // "": the default namespace (keys bonsai:fleet:{SERVICE}:...)
  std::atomic<uint32_t> expected_hosts;         // before any grant the fallback is cap / this (0: 1)
};
static_assert(sizeof(ShmFleet) % 64 == 0);

}  // namespace bonsai
