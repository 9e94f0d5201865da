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
  double calls_per_s = -1, bytes_per_s = -1;  // < 0: no interval measured
};
using CallStats = std::array<CallStat, kCallCount>;

struct ProcStat {
  int pid = 0;
  uint64_t start_time = 0;
  std::string comm;
  uint64_t limits_seq = 0;  // the limits this process has installed
  CallStats calls{};
};

struct ServiceStat {
  std::string service;
  ShmScope scope = ShmScope::Process;
  uint64_t limits_seq = 0;
  LimitSet limits{};
  uint64_t time_unix_ns = 0;
  uint64_t mono_ns = 0;
  double interval_s = 0;  // > 0 once rates were computed
  std::vector<ProcStat> processes;
  uint64_t exited_processes = 0;
  CallStats exited{};
  CallStats total{};
};

// Reclaims dead processes' slots, then copies the accounting.
ServiceStat stat_snapshot(Segment& seg);

// Fills the rates of `cur` from the counts since `prev` (same service).
void stat_rates(const ServiceStat& prev, ServiceStat& cur);

// The limits as BONSAI_LIMITS rules ("read+pread=10MiB/s").
std::vector<std::string> limits_text(const LimitSet& set);

}  // namespace bonsai::ctl
