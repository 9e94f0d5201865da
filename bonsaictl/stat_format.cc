// SPDX-License-Identifier: MIT
// JSON and table rendering of service accounting (see stat_format.h).
#include "stat_format.h"

#include <fmt/core.h>

namespace bonsai::ctl {
namespace {

const char* scope_name(ShmScope s) { return s == ShmScope::Service ? "service" : "process"; }

std::string calls_json(const CallStats& cs) {
  std::string out = "{";
  bool first = true;
  for (size_t c = 0; c < kCallCount; ++c) {
    const CallStat& s = cs[c];
    if (!s.calls && !s.bytes && !s.throttled && s.calls_per_s <= 0) continue;
    out += fmt::format("{}\"{}\":{{\"calls\":{},\"bytes\":{},\"throttled\":{},\"wait_ns\":{}", first ? "" : ",",
                       call_name(static_cast<CallId>(c)), s.calls, s.bytes, s.throttled, s.wait_ns);
    if (s.wire_bytes) out += fmt::format(",\"wire_bytes\":{}", s.wire_bytes);  // compressed sockets only
    if (s.calls_per_s >= 0) out += fmt::format(",\"calls_per_s\":{:.1f},\"bytes_per_s\":{:.1f}", s.calls_per_s, s.bytes_per_s);
    out += "}";
    first = false;
  }
  return out + "}";
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

void table_rows(std::string& out, const std::string& who, const CallStats& cs, bool with_rate, bool with_wire) {
  bool any = false;
  for (size_t c = 0; c < kCallCount; ++c) {
    const CallStat& s = cs[c];
    if (!s.calls && !s.throttled) continue;
    out += fmt::format("  {:<22} {:<16} {:>10} {:>11} {:>10} {:>10}", any ? "" : who,
                       call_name(static_cast<CallId>(c)), s.calls, human_bytes(static_cast<double>(s.bytes)), s.throttled,
                       human_ns(s.wait_ns));
    if (with_wire) out += fmt::format(" {:>11}", s.wire_bytes ? human_bytes(static_cast<double>(s.wire_bytes)) : "-");
    if (with_rate) out += fmt::format(" {:>12} {:>9.0f}", human_bytes(s.bytes_per_s) + "/s", s.calls_per_s);
    out += "\n";
    any = true;
  }
  if (!any) out += fmt::format("  {:<22} {}\n", who, "(no calls)");
}

}  // namespace

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\', out += static_cast<char>(ch);
    else if (ch < 0x20 || ch >= 0x7f) out += fmt::format("\\u{:04x}", ch);
    else out += static_cast<char>(ch);
  }
  return out;
}

std::string human_bytes(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return u == 0 ? fmt::format("{:.0f} B", b) : fmt::format("{:.2f} {}", b, kUnits[u]);
}

std::string human_ns(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  if (ns < 1'000'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < 1'000'000'000) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.2f} s", static_cast<double>(ns) / 1e9);
}

std::string stat_json(const ServiceStat& s) {
  std::string out = fmt::format("{{\"service\":\"{}\",\"scope\":\"{}\",\"time_unix_ns\":{},\"limits_seq\":{},\"limits\":[",
                                json_escape(s.service), scope_name(s.scope), s.time_unix_ns, s.limits_seq);
  auto lim = limits_text(s.limits);
  for (size_t i = 0; i < lim.size(); ++i) out += fmt::format("{}\"{}\"", i ? "," : "", json_escape(lim[i]));
  out += "]";
  if (s.interval_s > 0) out += fmt::format(",\"interval_s\":{:.3f}", s.interval_s);
  out += ",\"processes\":[";
  for (size_t i = 0; i < s.processes.size(); ++i) {
    const ProcStat& p = s.processes[i];
    out += fmt::format("{}{{\"pid\":{},\"comm\":\"{}\",\"supervised\":{},\"limits_seq\":{},\"calls\":{}}}",
                       i ? "," : "", p.pid, json_escape(p.comm), p.supervised ? "true" : "false", p.limits_seq,
                       calls_json(p.calls));
  }
  out += fmt::format("],\"uncounted_processes\":{}", s.uncounted_processes);
  out += fmt::format(",\"exited\":{{\"processes\":{},\"calls\":{}}}", s.exited_processes, calls_json(s.exited));
  out += fmt::format(",\"total\":{{\"processes\":{},\"calls\":{}}}}}", s.processes.size() + s.exited_processes,
                     calls_json(s.total));
  return out;
}

std::string stat_table(const ServiceStat& s) {
  bool rate = s.interval_s > 0, wire = any_wire(s);
  std::string out = fmt::format("service {} (scope {}, {} attached, {} exited)\n", s.service, scope_name(s.scope),
                                s.processes.size(), s.exited_processes);
  if (s.uncounted_processes)
    out += fmt::format("  WARNING: {} process{} could not be counted: all {} slots were taken when {} started\n",
                       s.uncounted_processes, s.uncounted_processes == 1 ? "" : "es", kMaxSlots,
                       s.uncounted_processes == 1 ? "it" : "they");
  auto lim = limits_text(s.limits);
  std::string joined;
  for (const auto& l : lim) joined += (joined.empty() ? "" : ", ") + l;
  out += fmt::format("  limits #{}: {}\n", s.limits_seq, joined.empty() ? "none (accounting only)" : joined);
  out += fmt::format("  {:<22} {:<16} {:>10} {:>11} {:>10} {:>10}", "PROCESS", "CALL", "CALLS", "BYTES", "THROTTLED",
                     "WAITED");
  if (wire) out += fmt::format(" {:>11}", "WIRE");
  if (rate) out += fmt::format(" {:>12} {:>9}", fmt::format("RATE/{:.1f}s", s.interval_s), "CALLS/s");
  out += "\n";
  for (const auto& p : s.processes) table_rows(out, fmt::format("{} {}{}", p.pid, p.comm, p.supervised ? " (supervised)" : ""), p.calls, rate, wire);
  if (s.exited_processes) table_rows(out, fmt::format("exited ({})", s.exited_processes), s.exited, rate, wire);
  table_rows(out, "total", s.total, rate, wire);
  return out;
}

}  // namespace bonsai::ctl
