// SPDX-License-Identifier: MIT
// Rows and rendering of `bonsaictl top` (see top_view.h).
#include "stat/top_view.h"

#include <algorithm>
#include <fmt/core.h>

#include "abi/limit_parse.h"
#include "bucket/protect_aimd.h"
#include "stat/stat_text.h"

namespace bonsai::ctl {

std::vector<TopRow> top_rows(const ServiceStat& prev, const ServiceStat& cur) {
  std::vector<TopRow> rows;
  double secs = cur.interval_s > 0 ? cur.interval_s : 0;
  auto delta = [&](size_t c, uint64_t CallStat::*field) {
    uint64_t a = prev.total[c].*field, b = cur.total[c].*field;
    return b > a ? static_cast<double>(b - a) : 0.0;
  };
  CallMask covered = 0;
  auto fill = [&](TopRow& row, CallMask calls) {
    double wait_ns = 0, held = 0;
    for (size_t c = 0; c < kCallCount; ++c) {
      if (!(calls & call_bit(static_cast<CallId>(c)))) continue;
      double bytes = delta(c, &CallStat::bytes), n = delta(c, &CallStat::calls);
      row.rate += secs > 0 ? (row.per_call ? n : bytes) / secs : 0;
      row.calls_per_s += secs > 0 ? n / secs : 0;
      // Held: calls that waited, and calls on non-blocking descriptors refused or cut
      // short (their descriptors' time held not ready counts as waiting).
      held += delta(c, &CallStat::throttled) + delta(c, &CallStat::refused) + delta(c, &CallStat::shortened);
      wait_ns += delta(c, &CallStat::wait_ns) + delta(c, &CallStat::held_ns);
    }
    row.throttled_per_s = secs > 0 ? held / secs : 0;
    row.wait_avg_ms = held > 0 ? wait_ns / held / 1e6 : 0;
  };
  for (uint32_t r = 0; r < cur.limits.count && r < kMaxRules; ++r) {
    const Rule& rule = cur.limits.rules[r];
    char text[256];
    rule_format(rule, text, sizeof text);
    TopRow row{cur.service, text};
    row.cap = static_cast<double>(rule_rate_micro(rule)) / static_cast<double>(kRateMicro);
    row.per_call = rule.unit == RateUnit::Calls;
    row.processes = cur.processes.size();
    fill(row, rule.calls);
    for (const ShareStat& sh : cur.shares)  // shares: what the rule borrowed over the interval
      if (sh.rule == r) {
        row.borrowed_per_s = 0;
        for (const ShareStat& b : prev.shares)
          if (b.rule == r && b.text == sh.text && sh.borrowed >= b.borrowed && secs > 0)
            row.borrowed_per_s = static_cast<double>(sh.borrowed - b.borrowed) / secs;
      }
    covered |= rule.calls;
    rows.push_back(row);
  }
  // protect: the measured p99 against the target and the controller's last
  // decision; the squeezed rules' rows show the caps it set.
  if (cur.protect.enabled) {
    TopRow row{cur.service, cur.protect.controller_pid
                                ? fmt::format("protect p99 {:.2f}/{:.2f}ms {}", static_cast<double>(cur.protect.p99_ns) / 1e6,
                                              static_cast<double>(cur.protect.target_ns) / 1e6,
                                              protect_decision_name(cur.protect.decision))
                                : fmt::format("protect {:.2f}ms: NO CONTROLLER", static_cast<double>(cur.protect.target_ns) / 1e6)};
    row.processes = cur.processes.size();
    fill(row, cur.protect.calls);
    rows.push_back(row);
  }
  for (size_t c = 0; c < kCallCount; ++c) {
    if (covered & call_bit(static_cast<CallId>(c))) continue;
    if (delta(c, &CallStat::calls) == 0) continue;
    TopRow row{cur.service, std::string(call_name(static_cast<CallId>(c)))};
    row.processes = cur.processes.size();
    fill(row, call_bit(static_cast<CallId>(c)));
    rows.push_back(row);
  }
  return rows;
}

void top_sort(std::vector<TopRow>& rows, TopSort key) {
  auto pct = [](const TopRow& r) { return r.cap > 0 ? r.rate / r.cap : -1; };
  std::stable_sort(rows.begin(), rows.end(), [&](const TopRow& a, const TopRow& b) {
    switch (key) {
      case TopSort::Rate: return a.rate > b.rate;
      case TopSort::Calls: return a.calls_per_s > b.calls_per_s;
      case TopSort::Cap: return pct(a) > pct(b);
      case TopSort::Throttled: return a.throttled_per_s > b.throttled_per_s;
      case TopSort::Wait: return a.wait_avg_ms > b.wait_avg_ms;
      case TopSort::Name: return a.service != b.service ? a.service < b.service : a.what < b.what;
    }
    return false;
  });
}

std::string top_render(const std::vector<TopRow>& rows, double interval_s, size_t width) {
  bool shares = false;  // a BORROW/s column when some rule has a ceiling
  for (const TopRow& r : rows) shares = shares || r.borrowed_per_s >= 0;
  std::string out = fmt::format("{:<16} {:<30} {:>12} {:>9} {:>12} {:>6} {:>9} {:>9} {:>5}{}\n", "SERVICE", "LIMIT/CALL",
                                "RATE", "CALLS/s", "CAP", "%CAP", "HELD/s", "WAIT ms", "PROCS",
                                shares ? fmt::format(" {:>12}", "BORROW/s") : "");
  for (const TopRow& r : rows) {
    std::string rate = r.per_call ? fmt::format("{:.0f}/s", r.rate) : human_bytes(r.rate) + "/s";
    std::string cap = r.cap <= 0 ? "-" : r.per_call ? fmt::format("{:.0f}/s", r.cap) : human_bytes(r.cap) + "/s";
    std::string pct = r.cap > 0 ? fmt::format("{:.0f}%", 100 * r.rate / r.cap) : "-";
    std::string line = fmt::format("{:<16} {:<30} {:>12} {:>9.0f} {:>12} {:>6} {:>9.0f} {:>9.2f} {:>5}", r.service,
                                   r.what, rate, r.calls_per_s, cap, pct, r.throttled_per_s, r.wait_avg_ms, r.processes);
    if (shares)
      line += fmt::format(" {:>12}", r.borrowed_per_s < 0 ? "-"
                                     : r.per_call     ? fmt::format("{:.0f}/s", r.borrowed_per_s)
                                                      : human_bytes(r.borrowed_per_s) + "/s");
    if (width && line.size() > width) line.resize(width);
    out += line + "\n";
  }
  if (rows.empty()) out += "(no services, or nothing moved)\n";
  (void)interval_s;
  return out;
}

}  // namespace bonsai::ctl
