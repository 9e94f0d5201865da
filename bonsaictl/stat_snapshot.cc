// SPDX-License-Identifier: MIT
// Copies a segment's accounting (see stat_snapshot.h). Reading races the processes'
// relaxed counter updates by design: each number is exact at some instant.
#include "stat_snapshot.h"

#include <cstring>

#include "abi/limit_parse.h"
#include "runtime/clock.h"
#include "shm/seqlock.h"
#include "shm/shm_slots.h"
#include "shm_client.h"

namespace bonsai::ctl {
namespace {

void add(CallStat& a, const CallStat& b) {
  a.calls += b.calls, a.bytes += b.bytes, a.throttled += b.throttled, a.wait_ns += b.wait_ns;
  a.wire_bytes += b.wire_bytes;
}

void rates(const CallStats& prev, CallStats& cur, double secs) {
  for (size_t c = 0; c < kCallCount; ++c) {
    auto delta = [&](uint64_t now, uint64_t then) { return now >= then ? static_cast<double>(now - then) / secs : 0.0; };
    cur[c].calls_per_s = delta(cur[c].calls, prev[c].calls);
    cur[c].bytes_per_s = delta(cur[c].bytes, prev[c].bytes);
  }
}

}  // namespace

std::vector<std::string> limits_text(const LimitSet& set) {
  std::vector<std::string> out;
  for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r) {
    char buf[512];
    rule_format(set.rules[r], buf, sizeof buf);
    out.emplace_back(buf);
  }
  return out;
}

ServiceStat stat_snapshot(Segment& handle) {
  ShmSegment& seg = handle.seg();
  slots_reclaim_dead(seg);
  ServiceStat s;
  s.service = handle.service();
  s.scope = static_cast<ShmScope>(seg.header.scope.load(std::memory_order_relaxed));
  if (!seqlock_read(seg.limits, s.limits, s.limits_seq, 100000)) s.limits.count = 0;
  s.time_unix_ns = unix_now_ns();
  s.mono_ns = mono_ns();
  for (auto& slot : seg.slots) {
    if (slot.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live)) continue;
    ProcStat p;
    p.pid = slot.pid.load(std::memory_order_relaxed);
    p.start_time = slot.start_time.load(std::memory_order_relaxed);
    p.limits_seq = slot.seen_seq.load(std::memory_order_acquire);
    p.comm.assign(slot.comm, strnlen(slot.comm, sizeof slot.comm));
    for (size_t c = 0; c < kCallCount; ++c) {
      CallTotals t = counters_total(slot.counters, static_cast<CallId>(c));
      p.calls[c] = CallStat{t.calls, t.bytes, t.throttled, t.wait_ns, t.wire_bytes};
    }
    // Released while we read it: its counts are in `exited` now (read below).
    if (slot.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live) ||
        slot.pid.load(std::memory_order_relaxed) != p.pid)
      continue;
    s.processes.push_back(std::move(p));
  }
  s.exited_processes = seg.exited.processes.load(std::memory_order_relaxed);
  for (size_t c = 0; c < kCallCount; ++c) {
    s.exited[c] = CallStat{seg.exited.calls[c].load(std::memory_order_relaxed), seg.exited.bytes[c].load(std::memory_order_relaxed),
                           seg.exited.throttled[c].load(std::memory_order_relaxed),
                           seg.exited.wait_ns[c].load(std::memory_order_relaxed),
                           seg.exited.wire_bytes[c].load(std::memory_order_relaxed)};
    s.total[c] = s.exited[c];
    for (const auto& p : s.processes) add(s.total[c], p.calls[c]);
  }
  return s;
}

void stat_rates(const ServiceStat& prev, ServiceStat& cur) {
  if (cur.mono_ns <= prev.mono_ns) return;
  double secs = static_cast<double>(cur.mono_ns - prev.mono_ns) / 1e9;
  cur.interval_s = secs;
  rates(prev.total, cur.total, secs);
  rates(prev.exited, cur.exited, secs);
  for (auto& p : cur.processes) {
    const ProcStat* before = nullptr;
    for (const auto& q : prev.processes)
      if (q.pid == p.pid && q.start_time == p.start_time) before = &q;
    static const CallStats kZero{};
    rates(before ? before->calls : kZero, p.calls, secs);
  }
}

}  // namespace bonsai::ctl
