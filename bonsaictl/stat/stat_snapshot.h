// SPDX-License-Identifier: MIT
// A consistent-enough copy of a segment's accounting for `stat` and `ls`: per live
// process, exited processes, and total, per call; and rates between two copies.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "abi/shm_abi.h"

namespace bonsai::ctl {

class Segment;

struct CallStat {
  uint64_t calls = 0, bytes = 0, throttled = 0, wait_ns = 0;
  uint64_t wire_bytes = 0;  // transfers on compressed sockets only
  // non-blocking descriptors (libbonsai/runtime/pace.h): calls refused with EAGAIN for
  // the cap, calls shortened for it, time descriptors were held not ready
  uint64_t refused = 0, shortened = 0, held_ns = 0;
  double calls_per_s = -1, bytes_per_s = -1;  // < 0: no interval measured
  // (totals only) held calls per wait bucket (abi/wait_hist.h), all processes together
  std::array<uint64_t, kWaitBuckets> wait_hist{};
};
using CallStats = std::array<CallStat, kCallCount>;

// What of a process escapes its limits, as its slot says: "static or Go program, no
// supervisor" (kSlotUnlimited), "io_uring" (kSlotUring, or a ring among its
// descriptors: proc_has_uring), "its libc takes no build of the library"
// (kSlotForeignLibc); empty when nothing is known to escape.
std::vector<std::string> not_limited(uint32_t slot_flags);

struct ProcStat {
  int pid = 0;              // our pid for it (a container's process: its host pid)
  uint32_t pid_ns = 0;      // another pid namespace's process: that namespace (else 0)
  int ns_pid = 0;           // ... and its pid there
  bool pid_unseen = false;  // ... in a namespace not visible from here: `pid` is ns_pid, not ours
  uint64_t start_time = 0;
  std::string comm;
  uint64_t limits_seq = 0;  // the limits this process has installed
  bool supervised = false;  // charged by a supervisor (`run --supervise`), not the library
  uint32_t sv_calls = 0;    // calls a supervisor handled (under --strict: what the library did not mark)
  uint32_t flags = 0;       // the slot's kSlot* bits (kSlotUnlimited: see not_limited())
  uint32_t lib_version = 0; // version_code() of the library or supervisor that claimed the slot
  CallStats calls{};
};

// Shares (docs/reference/shares.md), per rule with a ceiling: what it borrowed from the host, how
// long its calls waited for the rate (or the host) and for the ceiling, and what the host
// lent under its capacity rule (all of this user's services' borrowing together).
struct ShareStat {
  uint32_t rule = 0;
  std::string text;          // the rule, "write=5MiB/s:ceil=20MiB/s"
  std::string capacity;      // its capacity rule, "" if none installed (held to its rate)
  uint64_t borrowed = 0, held_rate_ns = 0, held_ceil_ns = 0, host_lent = 0;
  double borrowed_per_s = -1;
};

// A fleet service's lease as its segment says (bonsaictl/stat/stat_fleet.h renders it).
struct FleetRuleStat {
  uint64_t cap = 0, grant = 0, want = 0, fallback = 0, fleet_used = 0, owed = 0;  // units/s; grant, want,
                                                                                  // fleet_used, owed: per period
};
struct FleetStat {
  bool enabled = false;
  std::string store, host_id;
  std::string fleet_namespace;  // "default" or `namespace:`
  uint32_t period_ms = 0, live_hosts = 0;
  uint32_t expected_hosts = 0;  // 0: not given
  bool id_clash = false;        // the store saw another agent with this host id lately
  int agent_pid = 0;
  std::string state;            // "waiting" (no grant yet), "leased", "lapsed" (the library falls back)
  int64_t lease_left_ms = 0;    // < 0: ran out that long ago
  uint64_t renewals = 0, failures = 0, lapses = 0, lib_fallbacks = 0;
  std::vector<FleetRuleStat> rules;  // one per rule of the limits
};

// A protected service's controller status as its segment says (docs/reference/protect.md).
// The squeezed services' current rates are their own `limits` (the controller publishes them).
struct ProtectStat {
  bool enabled = false;      // its `protect:` names calls
  CallMask calls = 0;
  uint64_t target_ns = 0, p99_ns = 0, samples = 0, periods = 0, decided_unix_ns = 0;
  uint32_t decision = 0;     // ProtectDecision
  uint32_t controller_pid = 0;  // a live controller's (0: none)
  uint32_t stale_pid = 0;       // the pid a controller that is gone left (its pid may be reused)
  uint64_t timed = 0;           // calls timed since the segment was made (the histogram's sum)
};

struct ServiceStat {
  std::string service;
  ShmScope scope = ShmScope::Process;
  uint32_t layout = 0;  // the segment's layout (14: made by bonsai 0.2.0, read and written in place)
  std::string layout_damage;  // its section directory damaged (the base used alone): why
  uint64_t limits_seq = 0;
  LimitSet limits{};
  uint64_t time_unix_ns = 0;
  uint64_t mono_ns = 0;
  double interval_s = 0;  // > 0 once rates were computed
  std::vector<ProcStat> processes;
  uint64_t exited_processes = 0;
  uint64_t uncounted_processes = 0;  // found every slot taken: counted nowhere
  CallStats exited{};
  CallStats total{};
  std::vector<ShareStat> shares;  // rules with a ceiling (stat_shares.cc)
  FleetStat fleet;
  ProtectStat protect;
};

// Fills `s.shares` from the segment and the host's (stat_shares.cc).
void shares_snapshot(Segment& seg, ServiceStat& s);

// A service's copy with the user it belongs to (root's view of every user: Prometheus
// and JSON label it; "" -> no `user` label).
struct LabeledStat {
  const ServiceStat* stat;
  std::string user;
};

// Checks the segment (Segment::check), reclaims dead processes' slots, then copies
// the accounting. Throws CtlError with the damage (exit 1) if anything read is out
// of range: header, rule count and rules, slot states and pids.
ServiceStat stat_snapshot(Segment& seg);

// Reads the limits in force (seqlock) and checks them. Throws the damage if they
// are out of range or the sequence stays odd (a writer died mid-change).
// @return the limits; `seq` their sequence number.
LimitSet limits_read_checked(Segment& seg, uint64_t& seq);

// `comm` as read from a slot: printable UTF-8 kept ("dé"), every other byte (controls,
// C1 controls, a sequence the kernel cut at 15 bytes, garbage) as '?'.
std::string comm_text(const char* comm, size_t cap);

// The q-quantile (0 < q < 1) of a wait histogram in ns, interpolated within its
// bucket (the last, unbounded bucket answers its lower bound). 0 if it is empty.
uint64_t wait_quantile_ns(const std::array<uint64_t, kWaitBuckets>& hist, double q);

// Fills the rates of `cur` from the counts since `prev` (same service).
void stat_rates(const ServiceStat& prev, ServiceStat& cur);

// The limits as BONSAI_LIMITS rules ("read+pread=10MiB/s").
std::vector<std::string> limits_text(const LimitSet& set);

}  // namespace bonsai::ctl
