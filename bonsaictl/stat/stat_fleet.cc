// SPDX-License-Identifier: MIT
// Drawing a fleet service's lease (see stat_fleet.h).
#include "stat/stat_fleet.h"

#include <cstring>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "abi/limit_parse.h"
#include "config/agent_log.h"
#include "segment/shm_client.h"
#include "stat/stat_text.h"

namespace bonsai::ctl {

namespace {
std::string ago_text(uint64_t unix_ns) {
  uint64_t now = unix_now_ns();
  return now > unix_ns ? fmt::format("{:.1f} s ago", static_cast<double>(now - unix_ns) / 1e9) : "just now";
}

std::string rate_text(uint64_t units_per_s, RateUnit u) {
  return u == RateUnit::Calls ? fmt::format("{}/s", units_per_s) : human_bytes(static_cast<double>(units_per_s)) + "/s";
}
}  // namespace

std::string fleet_table(const FleetStat& f, const LimitSet& limits, const std::string& service) {
  if (!f.enabled) return "";
  std::string lease = f.state == "leased"   ? fmt::format("leased ({} ms left)", f.lease_left_ms)
                      : f.state == "lapsed" ? fmt::format("LAPSED {} ms ago: processes run at the fallback", -f.lease_left_ms)
                                            : std::string("waiting for the first grant");
  std::string out = fmt::format("  fleet: host '{}' via {}, namespace {}, period {} ms, lease {}\n", f.host_id, f.store,
                                f.fleet_namespace, f.period_ms, lease);
  if (f.id_clash)
    out += fmt::format("         HOST ID CLASH: another agent calls the store as '{}' too: give each host its own --host-id\n",
                       f.host_id);
  // Not leased: why, in one line, without reaching the store (`stat --fleet` does that).
  if (f.state != "leased" && !service.empty())
    if (std::string why = fleet_not_working(service, f.agent_pid); !why.empty())
      out += fmt::format("         NOT WORKING: {}\n", why);
  if (f.expected_hosts)
    out += fmt::format("         expected hosts {}: before any grant the fallback is the cap / {}\n", f.expected_hosts,
                       f.expected_hosts);
  out += fmt::format("         {} live host{}, agent pid {}, {} renewal{}, {} failed call{}, {} lapse{}, {} process fallback{}\n",
                     f.live_hosts, f.live_hosts == 1 ? "" : "s", f.agent_pid, f.renewals, f.renewals == 1 ? "" : "s",
                     f.failures, f.failures == 1 ? "" : "s", f.lapses, f.lapses == 1 ? "" : "s", f.lib_fallbacks,
                     f.lib_fallbacks == 1 ? "" : "s");
  double per_s = f.period_ms ? 1000.0 / f.period_ms : 0;
  for (size_t r = 0; r < f.rules.size() && r < limits.count; ++r) {
    const FleetRuleStat& q = f.rules[r];
    RateUnit u = limits.rules[r].unit;
    char name[256];
    rule_format(limits.rules[r], name, sizeof name);
    std::string text(name);
    if (size_t eq = text.find('='); eq != std::string::npos) text.resize(eq);
    out += fmt::format("         {}: fleet cap {}, grant {}, fallback {}, fleet use {}{}\n", text, rate_text(q.cap, u),
                       rate_text(static_cast<uint64_t>(static_cast<double>(q.grant) * per_s), u), rate_text(q.fallback, u),
                       rate_text(static_cast<uint64_t>(static_cast<double>(q.fleet_used) * per_s), u),
                       q.owed ? fmt::format(", repaying {}", q.owed) : "");
  }
  return out;
}

std::string fleet_json(const FleetStat& f) {
  if (!f.enabled) return "";
  nlohmann::ordered_json j = {{"host_id", f.host_id},       {"store", f.store},           {"namespace", f.fleet_namespace},
                              {"expected_hosts", f.expected_hosts}, {"host_id_clash", f.id_clash},
                              {"period_ms", f.period_ms},
                              {"state", f.state},           {"lease_left_ms", f.lease_left_ms},
                              {"live_hosts", f.live_hosts}, {"agent_pid", f.agent_pid},   {"renewals", f.renewals},
                              {"failures", f.failures},     {"lapses", f.lapses},         {"fallbacks", f.lib_fallbacks}};
  auto rules = nlohmann::ordered_json::array();
  for (const auto& q : f.rules)
    rules.push_back({{"cap", q.cap}, {"grant", q.grant}, {"want", q.want}, {"fallback", q.fallback},
                     {"fleet_used", q.fleet_used}, {"owed", q.owed}});
  j["rules"] = std::move(rules);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string fleet_agent_status_table(const FleetAgentStatus& s) {
  std::string out = fmt::format("  this host's agent (pid {}): store node {}{}\n", s.agent_pid,
                                s.node.primary.empty() ? "none answering" : s.node.primary,
                                s.node.sentinel.empty() ? "" : fmt::format(" (primary, named by Sentinel {})", s.node.sentinel));
  if (s.node.failovers)
    out += fmt::format("  last failover seen {}: {} -> {} ({}), {} in all\n", ago_text(s.node.last_failover_unix_ns),
                       s.node.last_from, s.node.last_to, s.node.last_reason, s.node.failovers);
  out += fmt::format("  on the fallback {:.1f} s in all{}{}\n", static_cast<double>(s.fallback_total_ms) / 1000,
                     s.fallback_last_ms ? fmt::format(", the last time {:.1f} s", static_cast<double>(s.fallback_last_ms) / 1000) : "",
                     s.fallback_since_unix_ns ? fmt::format(", ON IT NOW since {}", ago_text(s.fallback_since_unix_ns)) : "");
  return out;
}

std::string fleet_agent_status_json(const FleetAgentStatus& s) {
  nlohmann::ordered_json j = {{"agent_pid", s.agent_pid},
                              {"primary", s.node.primary},
                              {"sentinel", s.node.sentinel},
                              {"failovers", s.node.failovers},
                              {"last_failover_unix_ns", s.node.last_failover_unix_ns},
                              {"last_failover_from", s.node.last_from},
                              {"last_failover_to", s.node.last_to},
                              {"last_failover_reason", s.node.last_reason},
                              {"fallback_total_ms", s.fallback_total_ms},
                              {"fallback_last_ms", s.fallback_last_ms},
                              {"on_fallback", s.fallback_since_unix_ns != 0}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void fleet_prometheus(std::string& out, const std::vector<LabeledStat>& services) {
  bool any = false;
  for (const auto& s : services) any = any || s.stat->fleet.enabled;
  if (!any) return;
  auto lab = [](const LabeledStat& s, const std::string& extra) {
    std::string l = "{service=\"" + prom_label_escape(s.stat->service) + "\"";
    if (!s.user.empty()) l += ",user=\"" + prom_label_escape(s.user) + "\"";
    return l + ",host=\"" + prom_label_escape(s.stat->fleet.host_id) + "\"" + extra + "}";
  };
  struct Gauge { const char* name; const char* type; const char* help; };
  auto family = [&](const Gauge& g, auto value) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", g.name, g.help, g.name, g.type);
    for (const auto& s : services)
      if (s.stat->fleet.enabled) out += fmt::format("{}{} {}\n", g.name, lab(s, ""), value(s.stat->fleet));
  };
  family({"bonsai_fleet_lease_ok", "gauge", "1 while this host's fleet lease is valid, 0 when it lapsed or is not granted yet."},
         [](const FleetStat& f) { return f.state == "leased" ? 1 : 0; });
  family({"bonsai_fleet_live_hosts", "gauge", "Hosts the store counts live for the service."},
         [](const FleetStat& f) { return f.live_hosts; });
  family({"bonsai_fleet_host_id_clash", "gauge", "1 while the store sees another agent calling with this host's id."},
         [](const FleetStat& f) { return f.id_clash ? 1 : 0; });
  family({"bonsai_fleet_renewals_total", "counter", "Leases granted to this host."}, [](const FleetStat& f) { return f.renewals; });
  family({"bonsai_fleet_failures_total", "counter", "Lease calls to the store that failed or timed out."},
         [](const FleetStat& f) { return f.failures; });
  family({"bonsai_fleet_fallbacks_total", "counter", "Times a process found the lease run out and applied the fallback."},
         [](const FleetStat& f) { return f.lib_fallbacks; });
  // The agent's status file: this user's services only (another user's agent keeps its own).
  std::vector<std::pair<const LabeledStat*, FleetAgentStatus>> agent;
  for (const auto& s : services) {
    FleetAgentStatus a;
    if (s.stat->fleet.enabled && s.user.empty() && fleet_status_read(s.stat->service, a)) agent.emplace_back(&s, a);
  }
  if (!agent.empty()) {
    out += "# HELP bonsai_fleet_store_primary_info The store node this host's agent leases from (primary: HOST:PORT, \"\" "
           "while none answers).\n# TYPE bonsai_fleet_store_primary_info gauge\n";
    for (const auto& [s, a] : agent)
      out += fmt::format("bonsai_fleet_store_primary_info{} 1\n",
                         lab(*s, ",primary=\"" + prom_label_escape(a.node.primary) + "\",sentinel=\"" +
                                     prom_label_escape(a.node.sentinel) + "\""));
    out += "# HELP bonsai_fleet_store_failovers_total Changes of the primary this host's agent has seen.\n"
           "# TYPE bonsai_fleet_store_failovers_total counter\n";
    for (const auto& [s, a] : agent) out += fmt::format("bonsai_fleet_store_failovers_total{} {}\n", lab(*s, ""), a.node.failovers);
    out += "# HELP bonsai_fleet_store_last_failover_timestamp_seconds When this host's agent last saw the primary change "
           "(0: never).\n# TYPE bonsai_fleet_store_last_failover_timestamp_seconds gauge\n";
    for (const auto& [s, a] : agent)
      out += fmt::format("bonsai_fleet_store_last_failover_timestamp_seconds{} {:.3f}\n", lab(*s, ""),
                         static_cast<double>(a.node.last_failover_unix_ns) / 1e9);
    out += "# HELP bonsai_fleet_fallback_seconds_total Time this host ran on its fallback (the lease lapsed, no grant).\n"
           "# TYPE bonsai_fleet_fallback_seconds_total counter\n";
    for (const auto& [s, a] : agent)
      out += fmt::format("bonsai_fleet_fallback_seconds_total{} {:.3f}\n", lab(*s, ""),
                         static_cast<double>(a.fallback_total_ms) / 1000);
  }
  struct PerRule { const char* name; const char* help; uint64_t FleetRuleStat::*field; bool per_period; };
  for (const PerRule& pr : {PerRule{"bonsai_fleet_cap_per_second", "The fleet-wide cap, by rule.", &FleetRuleStat::cap, false},
                            PerRule{"bonsai_fleet_grant_per_second", "This host's grant, by rule.", &FleetRuleStat::grant, true},
                            PerRule{"bonsai_fleet_fallback_per_second", "This host's fallback rate, by rule.", &FleetRuleStat::fallback, false},
                            PerRule{"bonsai_fleet_used_per_second", "What the live hosts used together, by rule.", &FleetRuleStat::fleet_used, true}}) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", pr.name, pr.help, pr.name);
    for (const auto& s : services) {
      const FleetStat& f = s.stat->fleet;
      if (!f.enabled) continue;
      for (size_t r = 0; r < f.rules.size(); ++r) {
        double v = static_cast<double>(f.rules[r].*pr.field);
        if (pr.per_period) v = f.period_ms ? v * 1000.0 / f.period_ms : 0;
        out += fmt::format("{}{} {:.0f}\n", pr.name, lab(s, fmt::format(",rule=\"{}\"", r)), v);
      }
    }
  }
}

}  // namespace bonsai::ctl
