// SPDX-License-Identifier: MIT
// JSON and table rendering of service accounting (see stat_format.h).
#include "stat/stat_format.h"

#include <fmt/core.h>
#include <map>
#include <nlohmann/json.hpp>

#include "config/agent_log.h"
#include "shm/shm_host.h"
#include "shm/shm_slots.h"
#include "stat/stat_fleet.h"
#include "bucket/protect_aimd.h"
#include "stat/stat_text.h"

namespace bonsai::ctl {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written (docs/reference/stat-json.md)

const char* scope_name(ShmScope s) { return s == ShmScope::Service ? "service" : "process"; }

// Rates with one decimal, as numbers (nlohmann would print every digit of a double).
double one_decimal(double v) { return static_cast<double>(static_cast<int64_t>(v * 10 + (v < 0 ? -0.5 : 0.5))) / 10; }

Json calls_json(const CallStats& cs) {
  Json out = Json::object();
  for (size_t c = 0; c < kCallCount; ++c) {
    const CallStat& s = cs[c];
    if (!s.calls && !s.bytes && !s.throttled && s.calls_per_s <= 0) continue;
    Json one = {{"calls", s.calls}, {"bytes", s.bytes}, {"throttled", s.throttled}, {"wait_ns", s.wait_ns}};
    if (s.wire_bytes) one["wire_bytes"] = s.wire_bytes;  // compressed sockets only
    if (s.refused || s.shortened || s.held_ns) {  // non-blocking descriptors
      one["refused"] = s.refused;
      one["shortened"] = s.shortened;
      one["held_ns"] = s.held_ns;
    }
    if (uint64_t p50 = wait_quantile_ns(s.wait_hist, 0.5)) {  // totals: the service's histogram
      one["wait_p50_ns"] = p50;
      one["wait_p99_ns"] = wait_quantile_ns(s.wait_hist, 0.99);
    }
    if (s.calls_per_s >= 0) {
      one["calls_per_s"] = one_decimal(s.calls_per_s);
      one["bytes_per_s"] = one_decimal(s.bytes_per_s);
    }
    out[std::string(call_name(static_cast<CallId>(c)))] = std::move(one);
  }
  return out;
}

// Any wire bytes (compressed sockets) to show? Then the table has a WIRE column.
bool any_wire(const ServiceStat& s) {
  for (const auto& c : s.total)
    if (c.wire_bytes) return true;
  for (const auto& p : s.processes)
    for (const auto& c : p.calls)
      if (c.wire_bytes) return true;
  return false;
}

// Any call on a non-blocking descriptor refused or shortened for the cap? Then the
// table has REFUSED and HELD columns.
bool any_paced(const ServiceStat& s) {
  for (const auto& c : s.total)
    if (c.refused || c.shortened || c.held_ns) return true;
  return false;
}

// Any held call in the service's wait histogram? Then the table has a P99 WAIT column.
bool any_hist(const ServiceStat& s) {
  for (const auto& c : s.total)
    for (uint64_t v : c.wait_hist)
      if (v) return true;
  return false;
}

void table_rows(std::string& out, const std::string& who, const CallStats& cs, bool with_rate, bool with_wire,
                bool with_hist = false, bool with_paced = false) {
  bool any = false;
  for (size_t c = 0; c < kCallCount; ++c) {
    const CallStat& s = cs[c];
    if (!s.calls && !s.throttled) continue;
    out += fmt::format("  {:<22} {:<16} {:>10} {:>11} {:>10} {:>10}", any ? "" : who,
                       call_name(static_cast<CallId>(c)), s.calls, human_bytes(static_cast<double>(s.bytes)), s.throttled,
                       human_ns(s.wait_ns));
    if (with_wire) out += fmt::format(" {:>11}", s.wire_bytes ? human_bytes(static_cast<double>(s.wire_bytes)) : "-");
    if (with_hist) {
      uint64_t p99 = wait_quantile_ns(s.wait_hist, 0.99);
      out += fmt::format(" {:>10}", p99 ? human_ns(p99) : "-");
    }
    if (with_paced) out += fmt::format(" {:>10} {:>10}", s.refused + s.shortened, s.held_ns ? human_ns(s.held_ns) : "-");
    if (with_rate) out += fmt::format(" {:>12} {:>9.0f}", human_bytes(s.bytes_per_s) + "/s", s.calls_per_s);
    out += "\n";
    any = true;
  }
  if (!any) out += fmt::format("  {:<22} {}\n", who, "(no calls)");
}

// "0.2.0 (3 processes)", or each version with its count when they differ, and what
// bonsaictl itself is when that is not the same: a library older than bonsaictl
// after an upgrade is something an operator wants to see.
std::string versions_line(const ServiceStat& s) {
  std::map<uint32_t, size_t> seen;
  for (const ProcStat& p : s.processes) ++seen[p.lib_version];
  std::string out;
  for (const auto& [code, n] : seen)
    out += fmt::format("{}{} ({} process{})", out.empty() ? "" : ", ", version_text(code), n, n == 1 ? "" : "es");
  if (seen.size() > 1 || seen.begin()->first != slot_version_code())
    out += fmt::format("; bonsaictl is {}", version_text(slot_version_code()));
  return out;
}

}  // namespace

namespace {
std::string json_dump(const Json& j) {
  // Bytes that are not UTF-8 (a name read from an untrusted segment) become U+FFFD
  // instead of an exception.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}
}  // namespace

std::string stat_json(const ServiceStat& s) {
  Json doc = {{"service", s.service}, {"scope", scope_name(s.scope)}, {"time_unix_ns", s.time_unix_ns},
              {"limits_seq", s.limits_seq}, {"limits", limits_text(s.limits)}, {"layout", s.layout}};
  if (s.interval_s > 0) doc["interval_s"] = static_cast<double>(static_cast<int64_t>(s.interval_s * 1000 + 0.5)) / 1000;
  Json procs = Json::array();
  for (const ProcStat& p : s.processes) {
    procs.push_back({{"pid", p.pid}, {"comm", p.comm}, {"supervised", p.supervised},
                     {"supervised_calls", p.sv_calls}, {"not_limited", not_limited(p.flags)},
                     {"library_version", version_text(p.lib_version)}, {"limits_seq", p.limits_seq},
                     {"calls", calls_json(p.calls)}});
    if (p.flags & kSlotNoHost) procs.back()["borrowing"] = false;  // no host segment (docs/reference/shares.md)
    if (p.pid_ns) {  // a container's process (docs/reference/containers.md)
      procs.back()["pid_ns"] = p.pid_ns;
      procs.back()["ns_pid"] = p.ns_pid;
      if (p.pid_unseen) procs.back()["pid"] = nullptr;  // that namespace is not visible from here
    }
  }
  doc["processes"] = std::move(procs);
  doc["uncounted_processes"] = s.uncounted_processes;
  doc["exited"] = {{"processes", s.exited_processes}, {"calls", calls_json(s.exited)}};
  doc["total"] = {{"processes", s.processes.size() + s.exited_processes}, {"calls", calls_json(s.total)}};
  if (!s.shares.empty()) {  // rules with a ceiling (docs/reference/shares.md)
    Json shares = Json::array();
    for (const ShareStat& sh : s.shares) {
      Json one = {{"rule", sh.text}, {"capacity", sh.capacity}, {"borrowed_bytes", sh.borrowed},
                  {"host_lent_bytes", sh.host_lent}, {"held_rate_ns", sh.held_rate_ns},
                  {"held_ceil_ns", sh.held_ceil_ns}};
      if (sh.borrowed_per_s >= 0) one["borrowed_per_s"] = one_decimal(sh.borrowed_per_s);
      shares.push_back(std::move(one));
    }
    doc["shares"] = std::move(shares);
  }
  if (std::string f = fleet_json(s.fleet); !f.empty()) doc["fleet"] = Json::parse(f);
  if (s.protect.enabled) {
    Json calls = Json::array();
    for (size_t c = 0; c < kCallCount; ++c)
      if (s.protect.calls & call_bit(static_cast<CallId>(c))) calls.push_back(call_name(static_cast<CallId>(c)));
    doc["protect"] = {{"calls", calls}, {"target_p99_ns", s.protect.target_ns}, {"p99_ns", s.protect.p99_ns},
                      {"samples", s.protect.samples}, {"periods", s.protect.periods},
                      {"decision", protect_decision_name(s.protect.decision)},
                      {"decided_unix_ns", s.protect.decided_unix_ns}, {"controller_pid", s.protect.controller_pid},
                      {"stale_pid", s.protect.stale_pid}, {"timed", s.protect.timed}};
  }
  return json_dump(doc);
}

std::string stat_table(const ServiceStat& s) {
  bool rate = s.interval_s > 0, wire = any_wire(s), hist = any_hist(s), paced = any_paced(s);
  std::string out = fmt::format("service {} (scope {}, {} attached, {} exited)\n", s.service, scope_name(s.scope),
                                s.processes.size(), s.exited_processes);
  if (s.uncounted_processes)
    out += fmt::format("  WARNING: {} process{} could not be counted: all {} slots were taken when {} started\n",
                       s.uncounted_processes, s.uncounted_processes == 1 ? "" : "es", kMaxSlots,
                       s.uncounted_processes == 1 ? "it" : "they");
  if (!s.layout_damage.empty())
    out += fmt::format("  WARNING: its section directory was written over ({}): caps and counters are kept (the base), "
                       "later sections are not used; a process of the service (or its container) wrote it\n",
                       s.layout_damage);
  // A segment the previous release made (docs/upgrades.md): said here, once per service.
  if (s.layout && s.layout < BONSAI_ABI_VERSION) {
    out += fmt::format("  segment layout {} (made by bonsai 0.2.0): read and written in place; its processes keep it\n",
                       s.layout);
    if (s.fleet.enabled)
      out += "  NOTE: fleet configuration written by 0.2.0 (in the segment): this release's agent serves the service "
             "only after `bonsaictl load` with this release; until then the 0.2.0 agent, while it runs, or the last "
             "grants and the fallback hold\n";
  }
  auto lim = limits_text(s.limits);
  std::string joined;
  for (const auto& l : lim) joined += (joined.empty() ? "" : ", ") + l;
  out += fmt::format("  limits #{}: {}\n", s.limits_seq, joined.empty() ? "none (accounting only)" : joined);
  out += fleet_table(s.fleet, s.limits, s.service);
  if (s.protect.enabled) {
    std::string calls;
    for (size_t c = 0; c < kCallCount; ++c)
      if (s.protect.calls & call_bit(static_cast<CallId>(c)))
        calls += fmt::format("{}{}", calls.empty() ? "" : "+", call_name(static_cast<CallId>(c)));
    out += fmt::format("  protect: {} p99 target {:.3f} ms", calls, static_cast<double>(s.protect.target_ns) / 1e6);
    if (!s.protect.controller_pid) {
      std::string last = agent_log_last("protect-agent");
      out += fmt::format(", NO CONTROLLER running{} (bonsaictl protect-agent FILE){}\n",
                         s.protect.stale_pid ? fmt::format(" (pid {} is gone)", s.protect.stale_pid) : "",
                         last.empty() ? "" : fmt::format("; the log of the one load starts ({}) ends: {}",
                                                         agent_log_path("protect-agent"), last));
    }
    else
      out += fmt::format("; last period {:.3f} ms over {} calls, decision: {} (controller pid {}, {} periods)\n",
                         static_cast<double>(s.protect.p99_ns) / 1e6, s.protect.samples,
                         protect_decision_name(s.protect.decision), s.protect.controller_pid, s.protect.periods);
  }
  if (!s.processes.empty()) out += fmt::format("  library {}\n", versions_line(s));
  out += fmt::format("  {:<22} {:<16} {:>10} {:>11} {:>10} {:>10}", "PROCESS", "CALL", "CALLS", "BYTES", "THROTTLED",
                     "WAITED");
  if (wire) out += fmt::format(" {:>11}", "WIRE");
  if (hist) out += fmt::format(" {:>10}", "P99 WAIT");
  if (paced) out += fmt::format(" {:>10} {:>10}", "REFUSED", "HELD");
  if (rate) out += fmt::format(" {:>12} {:>9}", fmt::format("RATE/{:.1f}s", s.interval_s), "CALLS/s");
  out += "\n";
  for (const auto& p : s.processes) {
    std::string marks = p.supervised ? " (supervised)" : "";
    // Another pid namespace's (a container's): its own pid there too (--json names the namespace).
    if (p.pid_ns) marks += fmt::format(" (ns pid {}{})", p.ns_pid, p.pid_unseen ? ", namespace not visible here" : "");
    for (const auto& n : not_limited(p.flags)) marks += fmt::format(" ({}: NOT limited)", n);
    if (p.flags & kSlotNoHost) marks += " (no host capacity: its rates, no borrowing)";
    table_rows(out, fmt::format("{} {}{}", p.pid, p.comm, marks), p.calls, rate, wire, hist, paced);
  }
  if (s.exited_processes)
    table_rows(out, fmt::format("exited ({})", s.exited_processes), s.exited, rate, wire, hist, paced);
  table_rows(out, "total", s.total, rate, wire, hist, paced);
  for (const ShareStat& sh : s.shares) {
    if (sh.capacity.empty()) {
      out += fmt::format("  shares {}: no host capacity over it: held to its rate\n", sh.text);
      continue;
    }
    out += fmt::format("  shares {} under {}: borrowed {}, host lent {}, held by rate {}, by ceil {}\n", sh.text,
                       sh.capacity, human_bytes(static_cast<double>(sh.borrowed)),
                       human_bytes(static_cast<double>(sh.host_lent)), human_ns(sh.held_rate_ns),
                       human_ns(sh.held_ceil_ns));
  }
  return out;
}

}  // namespace bonsai::ctl
