// SPDX-License-Identifier: MIT
// The Prometheus text format of service accounting (see stat_prometheus.h).
#include "stat/stat_prometheus.h"
#include "stat/stat_fleet.h"
#include "stat/stat_text.h"

#include <fmt/core.h>

namespace bonsai::ctl {
namespace {

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

constexpr Family kBorrowed{"bonsai_share_borrowed_bytes_total", "counter",
                           "Bytes (or calls) a rule with a ceiling borrowed from the host's idle capacity."};
constexpr Family kLent{"bonsai_share_host_lent_bytes_total", "counter",
                       "What the host lent under the rule's capacity rule, all of the user's services together."};
constexpr Family kHeldRate{"bonsai_share_held_rate_seconds_total", "counter",
                           "Time calls of a rule with a ceiling waited for its rate (or the host)."};
constexpr Family kHeldCeil{"bonsai_share_held_ceil_seconds_total", "counter",
                           "Time calls of a rule with a ceiling waited for the ceiling."};
constexpr Family kCalls{"bonsai_calls_total", "counter", "Calls made, by service and call name."};
constexpr Family kBytes{"bonsai_bytes_total", "counter", "Application bytes moved, by service and call name."};
constexpr Family kWire{"bonsai_wire_bytes_total", "counter",
                       "Bytes on the wire of transfers on compressed sockets, by service and call name."};
constexpr Family kThrottled{"bonsai_throttled_calls_total", "counter", "Calls that were held back by a limit."};
constexpr Family kWait{"bonsai_wait_seconds_total", "counter", "Time calls spent held back by a limit."};
constexpr Family kWaitHist{"bonsai_wait_seconds", "histogram",
                           "How long held calls waited, by service and call name (all processes together)."};
constexpr Family kRefused{"bonsai_refused_calls_total", "counter",
                          "Calls on non-blocking descriptors refused (EAGAIN) for a limit."};
constexpr Family kShortened{"bonsai_shortened_calls_total", "counter",
                            "Calls on non-blocking descriptors that moved less than asked for a limit."};
constexpr Family kHeld{"bonsai_held_seconds_total", "counter",
                       "Time non-blocking descriptors were held not ready for a limit."};
constexpr Family kProcs{"bonsai_processes", "gauge", "Processes attached to the service now."};
constexpr Family kExited{"bonsai_exited_processes_total", "counter", "Processes of the service that have exited."};
constexpr Family kUncounted{"bonsai_uncounted_processes_total", "counter",
                            "Processes that found every slot of the segment taken and were counted nowhere."};
constexpr Family kLimitBytes{"bonsai_limit_bytes_per_second", "gauge",
                             "Byte rate limits in force, by service, call name and descriptor kind."};
constexpr Family kLimitCalls{"bonsai_limit_calls_per_second", "gauge",
                             "Call rate limits in force, by service, call name and descriptor kind."};

std::string labels(const LabeledStat& s, const std::string& extra = "") {
  std::string out = "{service=\"" + prom_label_escape(s.stat->service) + "\"";
  if (!s.user.empty()) out += ",user=\"" + prom_label_escape(s.user) + "\"";
  return out + extra + "}";
}

std::string call_label(size_t c) { return fmt::format(",call=\"{}\"", call_name(static_cast<CallId>(c))); }

// "socket", "file", "pipe" joined with '|' for a rule with `fd=`; "any" without.
std::string fd_label(uint8_t mask) {
  if ((mask & kFdKindsWithFd) == kFdKindsWithFd || mask == kAnyFd) return "any";
  std::string out;
  for (uint8_t k = 0; k < 3; ++k)
    if (mask & (1u << k)) out += (out.empty() ? "" : "|") + std::string(fd_kind_name(static_cast<FdKind>(k)));
  return out.empty() ? "none" : out;
}

void head(std::string& out, const Family& f) { out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type); }

// `only_set`: a series only once its value is nonzero (wire bytes: compressed sockets).
template <class Value>
void per_call(std::string& out, const Family& f, const std::vector<LabeledStat>& services, Value value,
              bool only_set = false) {
  head(out, f);
  for (const auto& s : services)
    for (size_t c = 0; c < kCallCount; ++c) {
      const CallStat& cs = s.stat->total[c];
      if (!cs.calls && !cs.bytes && !cs.throttled && !cs.wire_bytes) continue;
      if (only_set && value(cs) == "0") continue;
      out += fmt::format("{}{} {}\n", f.name, labels(s, call_label(c)), value(cs));
    }
}

// Protect: each protected service's target, last measured p99 and decision.
// The squeezed rules' current rates are bonsai_limit_*_per_second of their services.
void protect_prometheus(std::string& out, const std::vector<LabeledStat>& services) {
  bool any = false;
  for (const auto& s : services) any = any || s.stat->protect.enabled;
  if (!any) return;
  auto family = [&](const char* name, const char* help, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
    for (const auto& s : services)
      if (s.stat->protect.enabled) out += fmt::format("{}{} {}\n", name, labels(s), value(s.stat->protect));
  };
  family("bonsai_protect_target_p99_seconds", "The p99 target of the service's protected calls.",
         [](const ProtectStat& p) { return fmt::format("{:.9f}", static_cast<double>(p.target_ns) / 1e9); });
  family("bonsai_protect_p99_seconds", "The p99 of its protected calls over the controller's last period (0: idle).",
         [](const ProtectStat& p) { return fmt::format("{:.9f}", static_cast<double>(p.p99_ns) / 1e9); });
  family("bonsai_protect_decision", "The controller's last decision: 0 none, 1 decrease, 2 increase, 3 hold, 4 idle, 5 wait (above the target, awaiting more calls).",
         [](const ProtectStat& p) { return fmt::format("{}", p.decision); });
  family("bonsai_protect_controller_up", "1 while a protect-agent serves the service.",
         [](const ProtectStat& p) { return fmt::format("{}", p.controller_pid ? 1 : 0); });
}

}  // namespace

std::string prometheus_text(const std::vector<LabeledStat>& services) {
  std::string out;
  per_call(out, kCalls, services, [](const CallStat& c) { return fmt::format("{}", c.calls); });
  per_call(out, kBytes, services, [](const CallStat& c) { return fmt::format("{}", c.bytes); });
  per_call(out, kWire, services, [](const CallStat& c) { return fmt::format("{}", c.wire_bytes); }, true);
  per_call(out, kThrottled, services, [](const CallStat& c) { return fmt::format("{}", c.throttled); });
  per_call(out, kWait, services, [](const CallStat& c) { return fmt::format("{:.9f}", static_cast<double>(c.wait_ns) / 1e9); });
  per_call(out, kRefused, services, [](const CallStat& c) { return fmt::format("{}", c.refused); }, true);
  per_call(out, kShortened, services, [](const CallStat& c) { return fmt::format("{}", c.shortened); }, true);
  per_call(out, kHeld, services, [](const CallStat& c) {
    return c.held_ns ? fmt::format("{:.9f}", static_cast<double>(c.held_ns) / 1e9) : std::string("0");
  }, true);
  head(out, kWaitHist);
  for (const auto& s : services)
    for (size_t c = 0; c < kCallCount; ++c) {
      const CallStat& cs = s.stat->total[c];
      uint64_t n = 0;
      for (uint64_t v : cs.wait_hist) n += v;
      if (!n) continue;
      uint64_t cum = 0;
      for (unsigned k = 0; k < kWaitBuckets; ++k) {
        cum += cs.wait_hist[k];
        std::string le = k + 1 == kWaitBuckets ? "+Inf" : fmt::format("{}", static_cast<double>(wait_bucket_le_ns(k)) / 1e9);
        out += fmt::format("{}_bucket{} {}\n", kWaitHist.name, labels(s, call_label(c) + ",le=\"" + le + "\""), cum);
      }
      out += fmt::format("{}_sum{} {:.9f}\n", kWaitHist.name, labels(s, call_label(c)), static_cast<double>(cs.wait_ns) / 1e9);
      out += fmt::format("{}_count{} {}\n", kWaitHist.name, labels(s, call_label(c)), n);
    }
  for (const Family* f : {&kBorrowed, &kLent, &kHeldRate, &kHeldCeil}) {
    head(out, *f);
    for (const auto& s : services)
      for (const ShareStat& sh : s.stat->shares) {
        std::string v = f == &kBorrowed ? fmt::format("{}", sh.borrowed)
                        : f == &kLent   ? fmt::format("{}", sh.host_lent)
                        : f == &kHeldRate ? fmt::format("{:.9f}", static_cast<double>(sh.held_rate_ns) / 1e9)
                                          : fmt::format("{:.9f}", static_cast<double>(sh.held_ceil_ns) / 1e9);
        out += fmt::format("{}{} {}\n", f->name, labels(s, ",rule=\"" + prom_label_escape(sh.text) + "\""), v);
      }
  }
  head(out, kProcs);
  for (const auto& s : services) out += fmt::format("{}{} {}\n", kProcs.name, labels(s), s.stat->processes.size());
  head(out, kExited);
  for (const auto& s : services) out += fmt::format("{}{} {}\n", kExited.name, labels(s), s.stat->exited_processes);
  head(out, kUncounted);
  for (const auto& s : services) out += fmt::format("{}{} {}\n", kUncounted.name, labels(s), s.stat->uncounted_processes);
  for (const Family* f : {&kLimitBytes, &kLimitCalls}) {
    head(out, *f);
    RateUnit unit = f == &kLimitBytes ? RateUnit::Bytes : RateUnit::Calls;
    for (const auto& s : services) {
      const LimitSet& set = s.stat->limits;
      for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r) {
        const Rule& rule = set.rules[r];
        if (rule.unit != unit) continue;
        for (size_t c = 0; c < kCallCount; ++c)
          if (rule.calls & call_bit(static_cast<CallId>(c)))
            out += fmt::format("{}{} {}\n", f->name,
                               labels(s, call_label(c) + ",fd=\"" + fd_label(rule.fd_mask) + "\""),
                               rule.rate_less_micro ? fmt::format("{:.6f}", static_cast<double>(rule_rate_micro(rule)) / 1e6)
                                                    : std::to_string(rule.rate));
      }
    }
  }
  fleet_prometheus(out, services);
  protect_prometheus(out, services);
  return out;
}

}  // namespace bonsai::ctl
