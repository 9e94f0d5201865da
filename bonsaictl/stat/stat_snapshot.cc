// SPDX-License-Identifier: MIT
// Copies a segment's accounting (see stat_snapshot.h). Reading races the processes'
// relaxed counter updates by design: each number is exact at some instant.
#include "stat/stat_snapshot.h"

#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <string_view>
#include <unistd.h>
#include <cstring>
#include <fmt/core.h>
#include <thread>
#include <unordered_map>

#include "abi/fleet_abi.h"
#include "abi/limit_parse.h"
#include "shm/seqlock.h"
#include "segment/proc_table.h"
#include "segment/protect_owner.h"
#include "shm/shm_check.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"
#include "sys/clock.h"
#include "segment/shm_client.h"
#include "config/fleet_trusted.h"

namespace bonsai::ctl {

namespace {
// A string of the fleet block cut at its bound, anything but printable ASCII as '?'.
std::string fleet_text(const char* s, size_t cap) {
  std::string out(s, strnlen(s, cap));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  return out;
}

// The fleet block (`rules`: the limits' rule count) as of `mono_now`: read from the
// segment (untrusted: strings cut at their bounds, counts as they are).
FleetStat fleet_snapshot(const ShmFleet& f, uint32_t rules, uint64_t mono_now) {
  FleetStat s;
  s.enabled = f.enabled.load(std::memory_order_acquire) == 1;
  if (!s.enabled) return s;
  s.host_id = fleet_text(f.host_id, kFleetHostIdMax);
  s.id_clash = f.id_clash.load(std::memory_order_relaxed) == 1;
  s.live_hosts = f.live_hosts.load(std::memory_order_relaxed);
  s.agent_pid = f.agent_pid.load(std::memory_order_relaxed);
  uint64_t exp = f.lease_expiry_ns.load(std::memory_order_acquire);
  s.state = exp == 0 ? "waiting" : mono_now < exp ? "leased" : "lapsed";
  s.lease_left_ms = exp == 0 ? 0 : (static_cast<int64_t>(exp) - static_cast<int64_t>(mono_now)) / 1'000'000;
  s.renewals = f.renewals.load(std::memory_order_relaxed);
  s.failures = f.failures.load(std::memory_order_relaxed);
  s.lapses = f.lapses.load(std::memory_order_relaxed);
  s.lib_fallbacks = f.lib_fallbacks.load(std::memory_order_relaxed);
  for (uint32_t r = 0; r < rules && r < kMaxRules; ++r)
    s.rules.push_back({f.cap[r].load(std::memory_order_relaxed), f.grant[r].load(std::memory_order_relaxed),
                       f.want[r].load(std::memory_order_relaxed), f.fallback[r].load(std::memory_order_relaxed),
                       f.fleet_used[r].load(std::memory_order_relaxed), f.owed[r].load(std::memory_order_relaxed)});
  return s;
}
// The store, namespace, period and expected hosts: the trusted configuration's (the
// agent's, config/fleet_trusted.h); the segment no longer holds them.
void fleet_trusted_show(const std::string& service, FleetStat& s) {
  FleetTrusted t;
  std::string why;
  int got = fleet_trusted_read(service, t, why);
  s.fleet_namespace = "default";
  if (got != 1) {
    s.store = got == 0 ? "(no trusted configuration: `load` its file again)" : "(unusable: " + why + ")";
    return;
  }
  s.store = t.fleet.store;
  if (!t.fleet.fleet_namespace.empty()) s.fleet_namespace = t.fleet.fleet_namespace;
  s.period_ms = t.fleet.period_ms;
  s.expected_hosts = t.fleet.expected_hosts;
}
}  // namespace

// Does process `pid` hold an io_uring (a descriptor on "anon_inode:[io_uring]")? What
// moves through a ring is not limited: `stat` says so. One readlink per
// descriptor, up to 4096 of them.
static bool proc_has_uring(int pid) {
  char dir[64];
  std::snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || ++n > 4096) continue;
    char link[64];
    ssize_t len = readlinkat(dirfd(d), e->d_name, link, sizeof link - 1);
    if (len > 0 && std::string_view(link, static_cast<size_t>(len)) == "anon_inode:[io_uring]") {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}
namespace {

void add(CallStat& a, const CallStat& b) {
  a.calls += b.calls, a.bytes += b.bytes, a.throttled += b.throttled, a.wait_ns += b.wait_ns;
  a.wire_bytes += b.wire_bytes;
  a.refused += b.refused;
  a.shortened += b.shortened;
  a.held_ns += b.held_ns;
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

LimitSet limits_read_checked(Segment& handle, uint64_t& seq) {
  LimitSet set{};
  bool ok = false;
  // A writer holds the sequence odd for microseconds; one that died is taken over
  // by the next `set` after 200 ms. Odd for longer than that: nobody is writing.
  uint64_t t0 = mono_ns(), odd = 0;
  handle.guarded([&] {
    while (!(ok = seqlock_read(handle.seg().limits, set, seq, 1000)) && mono_ns() - t0 < 300'000'000u)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!ok) odd = handle.seg().limits.seq.load(std::memory_order_relaxed);
  });
  if (!ok)
    handle.damaged(fmt::format("the limits' sequence number stays odd ({}): a writer died while changing them "
                               "(bonsaictl set rewrites them)",
                               odd));
  if (seq < 2) handle.damaged(fmt::format("the limits' sequence number is {} (it starts at 2)", seq));
  if (set.count > kMaxRules) handle.damaged(fmt::format("its limits hold {} rules (at most {})", set.count, kMaxRules));
  if (const char* p = limits_problem(set)) handle.damaged(fmt::format("its limits are invalid: {}", p));
  return set;
}

// Length of the valid UTF-8 sequence at s[i] (a printable character: no C0 or C1
// control, no overlong form, no surrogate), or 0.
static size_t utf8_printable(const unsigned char* s, size_t i, size_t n) {
  unsigned char b = s[i];
  if (b >= 0x20 && b < 0x7f) return 1;
  size_t len = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
  if (!len || i + len > n) return 0;
  uint32_t cp = b & (0xff >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    if ((s[i + k] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i + k] & 0x3f);
  }
  static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0)) return 0;
  return len;
}

std::string comm_text(const char* comm, size_t cap) {
  size_t n = strnlen(comm, cap);
  const auto* s = reinterpret_cast<const unsigned char*>(comm);
  std::string out;
  for (size_t i = 0; i < n;) {
    size_t len = utf8_printable(s, i, n);
    if (len) out.append(comm + i, len), i += len;
    else out += '?', ++i;
  }
  return out;
}

ServiceStat stat_snapshot(Segment& handle) {
  handle.check();
  ShmSegment& seg = handle.seg();
  ServiceStat s;
  s.service = handle.service();
  s.layout = handle.layout();
  if (handle.sections().damage) s.layout_damage = handle.sections().damage;
  s.limits = limits_read_checked(handle, s.limits_seq);
  uint32_t scope = 0;
  ProcTable procs;  // one pass over /proc for every slot, however many a tenant wrote
  std::unordered_map<int, bool> uring;  // per process, not per slot naming it
  handle.guarded([&] {
    slots_reclaim(seg, procs.slot_judge());
    uint32_t self_ns = procs.self_ns();
    scope = seg.header.scope.load(std::memory_order_relaxed);
    s.time_unix_ns = unix_now_ns();
    s.mono_ns = mono_ns();
    unsigned end = slots_scan_end(seg);
    for (unsigned i = 0; i < end; ++i) {
      ShmSlot& slot = seg.slots[i];
      if (slot.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live)) continue;
      ProcStat p;
      int slot_pid = slot.pid.load(std::memory_order_relaxed);
      p.pid = slot_pid;
      p.start_time = slot.start_time.load(std::memory_order_relaxed);
      uint32_t ns = seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed);
      int here = 0;
      SlotProc st = procs.judge(ns, slot_pid, p.start_time, here);
      if (st == SlotProc::Dead) continue;  // gone since the reclaim above (or reclaimed by another)
      // A container's process (another pid namespace): named by our pid for it. A slot
      // that no reading proves to be a process of ours is named by its own pid alone.
      if ((ns && ns != self_ns) || st == SlotProc::Unknown) {
        p.pid_ns = ns ? ns : self_ns;
        p.ns_pid = slot_pid;
      }
      if (st == SlotProc::Alive) p.pid = here;
      else p.pid_unseen = true;
      p.limits_seq = slot.seen_seq.load(std::memory_order_acquire);
      char comm[sizeof slot.comm];
      for (size_t k = 0; k < sizeof comm; ++k) comm[k] = __atomic_load_n(&slot.comm[k], __ATOMIC_RELAXED);
      p.comm = comm_text(comm, sizeof comm);
      p.flags = slot.flags.load(std::memory_order_relaxed);
      if (!(p.flags & kSlotUring) && !p.pid_unseen) {
        auto [it, fresh] = uring.try_emplace(p.pid, false);
        if (fresh) it->second = proc_has_uring(p.pid);
        if (it->second) p.flags |= kSlotUring;
      }
      p.supervised = p.flags & kSlotSupervised;
      p.sv_calls = slot.sv_calls.load(std::memory_order_relaxed);
      p.lib_version = slot.lib_version.load(std::memory_order_relaxed);
      for (size_t c = 0; c < kCallCount; ++c) {
        CallTotals t = counters_total(slot.counters, static_cast<CallId>(c));
        p.calls[c] = CallStat{t.calls, t.bytes, t.throttled, t.wait_ns, t.wire_bytes, t.refused, t.shortened, t.held_ns};
      }
      // Released while we read it: its counts are in `exited` now (read below).
      if (slot.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live) ||
          slot.pid.load(std::memory_order_relaxed) != slot_pid)
        continue;
      if (p.pid <= 0) continue;  // checked by handle.check(); changed since: not a process
      s.processes.push_back(std::move(p));
    }
    s.exited_processes = seg.exited.processes.load(std::memory_order_relaxed);
    s.uncounted_processes = seg.exited.uncounted.load(std::memory_order_relaxed);
    for (size_t c = 0; c < kCallCount; ++c) {
      s.exited[c] = CallStat{seg.exited.calls[c].load(std::memory_order_relaxed),
                             seg.exited.bytes[c].load(std::memory_order_relaxed),
                             seg.exited.throttled[c].load(std::memory_order_relaxed),
                             seg.exited.wait_ns[c].load(std::memory_order_relaxed),
                             seg.exited.wire_bytes[c].load(std::memory_order_relaxed),
                             seg.exited.refused[c].load(std::memory_order_relaxed),
                             seg.exited.shortened[c].load(std::memory_order_relaxed),
                             seg.exited.held_ns[c].load(std::memory_order_relaxed)};
      for (unsigned k = 0; k < kWaitBuckets; ++k)
        s.total[c].wait_hist[k] = seg.wait_hist.count[c][k].load(std::memory_order_relaxed);
    }
  });
  handle.guarded([&] { s.fleet = fleet_snapshot(seg.fleet, s.limits.count, s.mono_ns); });
  if (s.fleet.enabled) fleet_trusted_show(handle.service(), s.fleet);
  handle.guarded([&] {
    const ShmProtect& p = seg.protect;
    s.protect.calls = p.calls.load(std::memory_order_relaxed) & ~(kCallCount >= 64 ? 0 : ~CallMask{0} << (kCallCount % 64));
    s.protect.enabled = s.protect.calls != 0;
    s.protect.target_ns = p.target_ns.load(std::memory_order_relaxed);
    s.protect.p99_ns = p.p99_ns.load(std::memory_order_relaxed);
    s.protect.samples = p.samples.load(std::memory_order_relaxed);
    s.protect.periods = p.periods.load(std::memory_order_relaxed);
    s.protect.decided_unix_ns = p.decided_unix_ns.load(std::memory_order_relaxed);
    s.protect.decision = p.decision.load(std::memory_order_relaxed);
    s.protect.controller_pid = p.controller_pid.load(std::memory_order_relaxed);
    s.protect.stale_pid = p.controller_start.load(std::memory_order_relaxed);  // the start, for now
    for (unsigned k = 0; k < kProtectBuckets; ++k) s.protect.timed += p.hist[k].load(std::memory_order_relaxed);
  });
  if (s.protect.controller_pid && !protect_agent_alive(s.protect.controller_pid, s.protect.stale_pid)) {
    s.protect.stale_pid = s.protect.controller_pid;
    s.protect.controller_pid = 0;
  } else {
    s.protect.stale_pid = 0;
  }
  if (scope != static_cast<uint32_t>(ShmScope::Process) && scope != static_cast<uint32_t>(ShmScope::Service))
    handle.damaged(fmt::format("it has an unknown scope {}", scope));
  s.scope = static_cast<ShmScope>(scope);
  for (size_t c = 0; c < kCallCount; ++c) {
    auto hist = s.total[c].wait_hist;
    s.total[c] = s.exited[c];
    s.total[c].wait_hist = hist;
    for (const auto& p : s.processes) add(s.total[c], p.calls[c]);
  }
  shares_snapshot(handle, s);
  return s;
}

uint64_t wait_quantile_ns(const std::array<uint64_t, kWaitBuckets>& hist, double q) {
  uint64_t n = 0;
  for (uint64_t v : hist) n += v;
  if (!n) return 0;
  double rank = q * static_cast<double>(n), below = 0;
  for (unsigned k = 0; k < kWaitBuckets; ++k) {
    double here = static_cast<double>(hist[k]);
    if (below + here >= rank && here > 0) {
      uint64_t lo = k ? wait_bucket_le_ns(k - 1) : 0;
      if (k + 1 == kWaitBuckets) return lo;  // +Inf: its lower bound
      double hi = static_cast<double>(wait_bucket_le_ns(k));
      return static_cast<uint64_t>(static_cast<double>(lo) + (hi - static_cast<double>(lo)) * (rank - below) / here);
    }
    below += here;
  }
  return wait_bucket_le_ns(kWaitBuckets - 2);
}

void stat_rates(const ServiceStat& prev, ServiceStat& cur) {
  if (cur.mono_ns <= prev.mono_ns) return;
  double secs = static_cast<double>(cur.mono_ns - prev.mono_ns) / 1e9;
  cur.interval_s = secs;
  rates(prev.total, cur.total, secs);
  rates(prev.exited, cur.exited, secs);
  for (auto& sh : cur.shares)
    for (const auto& b : prev.shares)
      if (b.rule == sh.rule && b.text == sh.text && sh.borrowed >= b.borrowed)
        sh.borrowed_per_s = static_cast<double>(sh.borrowed - b.borrowed) / secs;
  for (auto& p : cur.processes) {
    const ProcStat* before = nullptr;
    for (const auto& q : prev.processes)
      if (q.pid == p.pid && q.start_time == p.start_time) before = &q;
    static const CallStats kZero{};
    rates(before ? before->calls : kZero, p.calls, secs);
  }
}

std::vector<std::string> not_limited(uint32_t slot_flags) {
  std::vector<std::string> out;
  if (slot_flags & kSlotUnlimited) out.emplace_back("static or Go program, no supervisor");
  if (slot_flags & kSlotUring) out.emplace_back("io_uring");
  if (slot_flags & kSlotForeignLibc) out.emplace_back("its libc takes no build of the library");
  return out;
}

}  // namespace bonsai::ctl
