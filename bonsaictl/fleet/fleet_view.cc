// SPDX-License-Identifier: MIT
// The fleet as the store sees it (see fleet_view.h).
#include "fleet/fleet_view.h"

#include <fmt/core.h>
#include <map>
#include <cstring>
#include <nlohmann/json.hpp>

#include "abi/limit_parse.h"
#include "base/diag.h"
#include "fleet/fleet_redis.h"
#include "fleet/fleet_script.h"
#include "config/fleet_trusted.h"
#include "segment/shm_client.h"
#include "stat/stat_fleet.h"
#include "stat/stat_text.h"

namespace bonsai::ctl {

namespace {
uint64_t to_u64(const std::string& s) {
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') break;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}
}  // namespace

int stat_fleet_view(const std::string& service, bool json) {
  // It connects and sends a password as the caller: the store, the password files and the
  // namespace come from the caller's own trusted configuration, never from the segment.
  if (ctl_other_user())
    usage_error("stat --fleet connects to the service's store as you: run it as the service's user, not with --user");
  FleetTrusted t;
  std::string bad;
  int got = fleet_trusted_read(service, t, bad);
  if (got < 0) runtime_error(bad);
  if (got == 0)
    runtime_error(fmt::format("service '{}' has no trusted fleet configuration in {} (no 'fleet:' in its file, or "
                              "loaded by bonsai 0.2.0: `load` its file again)", service, fleet_dir()));
  const std::string& password_file = t.fleet.password_file;
  const std::string& fleet_ns = t.fleet.fleet_namespace;
  const std::string ns_text = fleet_ns.empty() ? "default" : fleet_ns;
  const std::string& store = t.fleet.store;
  const uint32_t period_ms = t.fleet.period_ms;
  RedisConn redis;
  if (std::string why = redis.ensure(store, password_file, 1'000'000'000, t.fleet.sentinel_password_file); !why.empty())
    runtime_error(why);
  std::string p = fleet_key_prefix(fleet_ns, service);
  std::vector<std::string> now, live;
  if (std::string why = redis.command({"TIME"}, now); !why.empty() || now.size() != 2) runtime_error("TIME: " + why);
  uint64_t now_us = to_u64(now[0]) * 1'000'000 + to_u64(now[1]);
  if (std::string why = redis.command({"ZRANGE", p + "live", "0", "-1", "WITHSCORES"}, live); !why.empty())
    runtime_error(why);
  // Host ids two agents call with (fleet_script.h): host -> when the store last saw it.
  std::vector<std::string> clash_kv;
  if (std::string why = redis.command({"HGETALL", p + "clash"}, clash_kv); !why.empty()) runtime_error(why);
  std::map<std::string, uint64_t> clash;
  uint64_t clash_window_us = uint64_t{period_ms} * 30'000;  // as the script's (fleet_script.cc)
  for (size_t i = 0; i + 1 < clash_kv.size(); i += 2)
    if (uint64_t at = to_u64(clash_kv[i + 1]); now_us >= at && now_us - at < clash_window_us) clash[clash_kv[i]] = at;
  size_t rules = t.rules.count;
  // per rule: host -> want, used
  std::vector<std::map<std::string, std::pair<uint64_t, uint64_t>>> per(rules);
  for (size_t r = 0; r < rules; ++r) {
    for (const char* what : {"want", "used"}) {
      std::vector<std::string> kv;  // wants: a sorted set (member, score); uses: a hash
      std::vector<std::string> cmd = what[0] == 'w'
                                         ? std::vector<std::string>{"ZRANGE", fmt::format("{}r{}:wz", p, r + 1), "0", "-1", "WITHSCORES"}
                                         : std::vector<std::string>{"HGETALL", fmt::format("{}r{}:used", p, r + 1)};
      if (std::string why = redis.command(cmd, kv); !why.empty()) runtime_error(why);
      for (size_t i = 0; i + 1 < kv.size(); i += 2)
        (what[0] == 'w' ? per[r][kv[i]].first : per[r][kv[i]].second) = to_u64(kv[i + 1]);
    }
  }
  double per_s = period_ms ? 1000.0 / period_ms : 0;
  nlohmann::ordered_json doc = {{"service", service}, {"namespace", ns_text}, {"store", store},
                                {"period_ms", period_ms}, {"live_hosts", live.size() / 2}, {"host_id_clashes", clash.size()}};
  auto hosts = nlohmann::ordered_json::array();
  std::string table = fmt::format("fleet {} (namespace {}) via {}: {} live host{}, period {} ms\n", service,
                                  ns_text, store, live.size() / 2, live.size() / 2 == 1 ? "" : "s", period_ms);
  if (!clash.empty())
    table += fmt::format("  HOST ID CLASH: {} host id{} used by two agents or more (marked CLASH): give each host its own "
                         "--host-id\n", clash.size(), clash.size() == 1 ? "" : "s");
  table += fmt::format("  {:<24} {:>10}", "HOST", "SEEN");
  for (size_t r = 0; r < rules; ++r) table += fmt::format(" {:>14} {:>14}", fmt::format("r{} WANT/s", r + 1), fmt::format("r{} USED/s", r + 1));
  table += "\n";
  std::vector<double> total(rules, 0);
  for (size_t i = 0; i + 1 < live.size(); i += 2) {
    uint64_t seen = to_u64(live[i + 1]);
    double ago_ms = now_us > seen ? static_cast<double>(now_us - seen) / 1000 : 0;
    bool clashed = clash.count(live[i]) > 0;
    auto h = nlohmann::ordered_json{{"host", live[i]}, {"seen_ms_ago", static_cast<int64_t>(ago_ms)}, {"clash", clashed}};
    auto hr = nlohmann::ordered_json::array();
    table += fmt::format("  {:<24} {:>7.0f} ms", live[i], ago_ms);
    for (size_t r = 0; r < rules; ++r) {
      auto [want, used] = per[r][live[i]];
      total[r] += static_cast<double>(used) * per_s;
      hr.push_back({{"want_per_s", static_cast<uint64_t>(static_cast<double>(want) * per_s)},
                    {"used_per_s", static_cast<uint64_t>(static_cast<double>(used) * per_s)}});
      table += fmt::format(" {:>14} {:>14}", human_bytes(static_cast<double>(want) * per_s),
                           human_bytes(static_cast<double>(used) * per_s));
    }
    table += clashed ? "  CLASH\n" : "\n";
    h["rules"] = std::move(hr);
    hosts.push_back(std::move(h));
  }
  doc["hosts"] = std::move(hosts);
  auto rs = nlohmann::ordered_json::array();
  for (size_t r = 0; r < rules; ++r) {
    uint64_t cap = t.rules.rules[r].rate;
    rs.push_back({{"cap", cap}, {"used_per_s", static_cast<uint64_t>(total[r])}});
    table += fmt::format("  rule r{}: fleet cap {}/s, used {}/s together\n", r + 1, human_bytes(static_cast<double>(cap)),
                         human_bytes(total[r]));
  }
  doc["rules"] = std::move(rs);
  // The node this view read (for a Sentinel store: the primary the Sentinels named) and
  // what this host's agent saw: failovers, time on the fallback (fleet_status.h).
  const StoreNodeStatus& node = redis.node_status();
  doc["primary"] = node.primary;
  if (!node.sentinel.empty()) doc["sentinel"] = node.sentinel;
  table += fmt::format("  store node read: {}{}\n", node.primary,
                       node.sentinel.empty() ? "" : fmt::format(" (primary, named by Sentinel {})", node.sentinel));
  if (FleetAgentStatus a; fleet_status_read(service, a)) {
    doc["agent"] = nlohmann::ordered_json::parse(fleet_agent_status_json(a));
    table += fleet_agent_status_table(a);
  }
  if (json) fmt::print("{}\n", doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  else fmt::print("{}", table);
  return kExitOk;
}

}  // namespace bonsai::ctl
