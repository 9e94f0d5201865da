// SPDX-License-Identifier: MIT
// YAML configuration loader (see yaml_load.h): bonsai's schema checked with the position
// of every value, limits built with the same grammar and checks as BONSAI_LIMITS. What
// any strict YAML file needs (the first pass, reading a file) is yaml_strict.h.
#include "config/yaml_load.h"

#include <algorithm>
#include <fmt/core.h>
#include <unordered_set>

#include "abi/limit_parse.h"
#include "config/yaml_strict.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {
namespace {

struct Loader {
  const std::string& file;
  std::vector<Diag>& diags;
  std::unordered_set<std::string> service_names{};

  void error(const YAML::Mark& m, std::string msg) {
    diags.push_back(diag_at(file, m, std::move(msg)));  // yaml_load_string keeps the first kMaxConfigDiags
  }

  void unknown_key(const YAML::Node& key, std::string_view where, const std::vector<std::string_view>& keys) {
    std::string k = key.Scalar();
    std::string_view hint = k == "on" ? std::string_view("fd") : closest_word(k, keys);
    error(key.Mark(), hint.empty() ? fmt::format("unknown key '{}' in {}", k, where)
                                   : fmt::format("unknown key '{}' in {} (did you mean '{}'?)", k, where, hint));
  }

  // The rules of one service so far, for the "one call in two buckets" check: the
  // limit module's table (abi/limits_abi.h bucket_table_conflict) and, per rule, where
  // each of its calls was named.
  struct Claims {
    BucketTable table;
    std::vector<std::vector<std::pair<CallMask, YAML::Mark>>> named;  // per rule
    Claims() { bucket_table_clear(table); }
    YAML::Mark mark_of(uint8_t rule, CallId c) const {
      for (const auto& [mask, mark] : named[rule])
        if (mask & (CallMask{1} << static_cast<size_t>(c))) return mark;
      return YAML::Mark::null_mark();
    }
  };

  // One rule, checked against the service's `claims` so far.
  void rule(const YAML::Node& node, ServiceConfig& svc, Claims& claims) {
    if (!node.IsMap()) return error(node.Mark(), "a limit must be a mapping (calls, rate, burst, fd)");
    static const std::vector<std::string_view> kKeys = {"calls", "rate", "ceil", "burst", "fd", "floor"};
    Rule r{};
    r.fd_mask = kAnyFd;
    YAML::Node calls, rate, burst, ceil, floor;  // a default Node is a null node: track presence apart
    bool has_calls = false, has_rate = false, has_burst = false, has_ceil = false, has_floor = false;
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (key == "calls") calls.reset(kv.second), has_calls = true;
      else if (key == "rate") rate.reset(kv.second), has_rate = true;
      else if (key == "burst") burst.reset(kv.second), has_burst = true;
      else if (key == "ceil") ceil.reset(kv.second), has_ceil = true;
      else if (key == "floor") floor.reset(kv.second), has_floor = true;
      else if (key == "fd") fd(kv.second, r);
      else unknown_key(kv.first, "a limit", kKeys);
    }
    bool ok = true;
    std::vector<std::pair<CallMask, YAML::Mark>> named;
    if (!has_calls) ok = false, error(node.Mark(), "limit has no 'calls'");
    else call_list(calls, r, named, ok);
    if (!has_rate) ok = false, error(node.Mark(), "limit has no 'rate'");
    else rate_of(rate, r, named, ok);
    if (has_burst) {
      std::string b = burst.IsScalar() ? burst.Scalar() : "";
      if (!size_parse(b, r.burst) || r.burst == 0)
        ok = false, error(burst.Mark(), fmt::format("bad burst '{}' (a size like 256KiB, or a count, > 0)", b));
    }
    if (has_ceil && ok) ceil_of(ceil, r, ok);
    uint64_t floor_rate = ok ? std::max<uint64_t>(1, r.rate / 100) : 0;  // default: 1% of the rate
    if (has_floor && ok) floor_of(floor, r, floor_rate, ok);
    if (!ok) return;
    if (svc.limits.count == kMaxRules)
      return error(node.Mark(), fmt::format("service '{}' has more than {} limits", svc.name, kMaxRules));
    auto index = static_cast<uint8_t>(svc.limits.count);
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c) {
        if (!(mask & (CallMask{1} << c))) continue;
        Rule one = r;
        one.calls = CallMask{1} << c;
        TableConflict conflict;
        if (bucket_table_conflict(claims.table, one, index, &conflict)) {
          ok = false;
          error(mark, fmt::format("call '{}' is already limited at line {} of service '{}' (each call may be in "
                                  "one bucket)",
                                  call_name(conflict.call), claims.mark_of(conflict.first_rule, conflict.call).line + 1,
                                  svc.name));
        }
      }
    if (!ok) return;
    bucket_table_claim(claims.table, r, index);
    claims.named.push_back(std::move(named));
    svc.limits.rules[svc.limits.count++] = r;
    svc.rule_marks.push_back(node.Mark());
    svc.rule_floors.push_back(floor_rate);
  }

  // Protect: the least the controller may leave the rule, in its unit, <= rate.
  void floor_of(const YAML::Node& node, const Rule& r, uint64_t& out, bool& ok) {
    if (capacity_) return ok = false, error(node.Mark(), "a capacity rule has no 'floor' (nothing squeezes the host)");
    std::string text = node.IsScalar() ? node.Scalar() : "";
    ParseError err;
    RateUnit unit;
    uint64_t f = 0;
    if (!rate_parse(text, f, unit, err)) return ok = false, error(node.Mark(), fmt::format("floor: {}", err.message));
    if (unit != r.unit) return ok = false, error(node.Mark(), fmt::format("floor '{}' is not in the rate's unit", text));
    if (f * kRateMicro > rule_rate_micro(r))
      return ok = false, error(node.Mark(), fmt::format("floor '{}' is above the rate (the controller moves the rule "
                                                        "between its floor and its rate)", text));
    out = f;
  }

  void call_list(const YAML::Node& calls, Rule& r, std::vector<std::pair<CallMask, YAML::Mark>>& named, bool& ok) {
    std::vector<YAML::Node> items;
    if (calls.IsScalar()) items.push_back(calls);
    else if (calls.IsSequence()) for (const auto& c : calls) items.push_back(c);
    if (items.empty()) return ok = false, error(calls.Mark(), "'calls' must be a non-empty list of call names");
    for (const auto& item : items) {
      std::string name = item.IsScalar() ? item.Scalar() : "";
      CallMask m = call_mask_from_name(name);
      if (!m) {
        ok = false;
        std::string_view hint = call_name_suggest(name);
        error(item.Mark(), hint.empty() ? fmt::format("unknown call '{}'", name)
                                        : fmt::format("unknown call '{}' (did you mean '{}'?)", name, hint));
        continue;
      }
      if (r.calls & m) {
        ok = false;
        error(item.Mark(), fmt::format("call '{}' named twice in one limit", name));
        continue;
      }
      r.calls |= m;
      named.emplace_back(m, item.Mark());
    }
  }

  void rate_of(const YAML::Node& node, Rule& r, const std::vector<std::pair<CallMask, YAML::Mark>>& named, bool& ok) {
    std::string text = node.IsScalar() ? node.Scalar() : "";
    if (!text.empty() && text[0] == '-') return ok = false, error(node.Mark(), fmt::format("rate must be > 0 (got '{}')", text));
    ParseError err;
    uint64_t micro = 0;
    if (!rate_parse_micro(text, micro, r.unit, err)) return ok = false, error(node.Mark(), err.message);
    rule_set_rate_micro(r, micro);
    if (r.unit != RateUnit::Bytes) return;
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c)
        if ((mask & (CallMask{1} << c)) && !call_is_data(static_cast<CallId>(c))) {
          ok = false;
          error(node.Mark(), fmt::format("'{}' moves no data: give it a call rate like 200/s (got '{}')",
                                         call_name(static_cast<CallId>(c)), text));
          return;
        }
  }

  // Shares: the most a rule may reach borrowing (>= its rate, in its unit).
  void ceil_of(const YAML::Node& node, Rule& r, bool& ok) {
    if (capacity_) return ok = false, error(node.Mark(), "a capacity rule has no 'ceil' (it is the host's whole rate)");
    std::string text = node.IsScalar() ? node.Scalar() : "";
    ParseError err;
    RateUnit unit;
    if (!rate_parse(text, r.ceil, unit, err)) return ok = false, error(node.Mark(), fmt::format("ceil: {}", err.message));
    if (unit != r.unit) return ok = false, error(node.Mark(), fmt::format("ceil '{}' is not in the rate's unit", text));
    if (r.ceil * kRateMicro < rule_rate_micro(r))
      return ok = false, error(node.Mark(), fmt::format("ceil '{}' is below the rate (a ceiling is at least the "
                                                        "guaranteed rate)", text));
  }

  // `host: capacity:` (shares): the capacity rules, checked as a service's limits are.
  void host(const YAML::Node& node, Config& cfg) {
    cfg.has_host = true;
    if (!node.IsMap()) return error(node.Mark(), "'host' must be a mapping with 'capacity:'");
    static const std::vector<std::string_view> kKeys = {"capacity"};
    for (const auto& kv : node) {
      if (kv.first.Scalar() != "capacity") {
        unknown_key(kv.first, "'host'", kKeys);
        continue;
      }
      if (!kv.second.IsSequence()) {
        error(kv.second.Mark(), "'capacity' must be a list of rules (calls, rate, burst, fd)");
        continue;
      }
      ServiceConfig pseudo;
      pseudo.name = "host capacity";
      Claims claims;
      capacity_ = true;
      for (const auto& item : kv.second) rule(item, pseudo, claims);
      capacity_ = false;
      cfg.capacity = pseudo.limits;
      cfg.capacity_marks = pseudo.rule_marks;
    }
  }
  bool capacity_ = false;  // parsing `host: capacity:` rules

  void fd(const YAML::Node& v, Rule& r) {
    std::string k = v.IsScalar() ? v.Scalar() : "";
    if (k == "socket") r.fd_mask = 1u << static_cast<unsigned>(FdKind::Socket);
    else if (k == "file") r.fd_mask = 1u << static_cast<unsigned>(FdKind::File);
    else if (k == "pipe") r.fd_mask = 1u << static_cast<unsigned>(FdKind::Pipe);
    else error(v.Mark(), fmt::format("bad fd kind '{}' (socket, file or pipe)", k));
  }

  void service(const YAML::Node& key, const YAML::Node& node, Config& cfg) {
    ServiceConfig svc;
    svc.name = key.Scalar();
    svc.mark = key.Mark();
    if (!shm_service_name_valid(svc.name))
      error(key.Mark(), fmt::format("bad service name '{}' (1-63 of A-Z a-z 0-9 _ . -, not starting with . or -)", svc.name));
    if (!service_names.insert(svc.name).second) {  // a hash set: 200k services stay linear
      error(key.Mark(), fmt::format("service '{}' defined twice", svc.name));
      return;
    }
    if (node.IsNull()) return cfg.services.push_back(std::move(svc));
    if (!node.IsMap()) return error(node.Mark(), fmt::format("service '{}' must be a mapping", svc.name));
    static const std::vector<std::string_view> kKeys = {"scope", "limits", "compression", "fleet", "io_uring", "user",
                                                                 "strict", "protect"};
    Claims claims;
    YAML::Mark scope_mark;
    bool scope_given = false;
    for (const auto& kv : node) {
      std::string k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "scope") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "process") svc.scope = ShmScope::Process;
        else if (s == "service") svc.scope = ShmScope::Service;
        else error(v.Mark(), fmt::format("bad scope '{}' (process or service)", s));
        scope_mark = v.Mark(), scope_given = true;
      } else if (k == "limits") {
        if (v.IsNull()) continue;
        if (!v.IsSequence()) {
          error(v.Mark(), "'limits' must be a list");
          continue;
        }
        for (const auto& item : v) rule(item, svc, claims);
      } else if (k == "compression") {
        compression_load(v, file, svc.compression, diags);
      } else if (k == "fleet") {
        fleet_load(v, file, svc.fleet, diags);
      } else if (k == "protect") {
        protect_load(v, file, svc.protect, diags);
      } else if (k == "io_uring") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "deny" || s == "allow") svc.io_uring = s;
        else error(v.Mark(), fmt::format("bad io_uring '{}' (deny or allow)", s));
      } else if (k == "strict") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "true") svc.strict = true;
        else if (s == "false") svc.strict = false;
        else error(v.Mark(), fmt::format("bad strict '{}' (true or false)", s));
      } else if (k == "user") {  // a name checked here; whether it exists, where it is loaded
        std::string s = v.IsScalar() ? v.Scalar() : "";
        bool ok = !s.empty() && s.size() <= 32 && s.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$") ==
                                                      std::string::npos && s[0] != '-';
        if (ok) svc.user = s, svc.user_mark = v.Mark();
        else error(v.Mark(), fmt::format("bad user '{}' (a user name or uid)", s));
      } else {
        unknown_key(kv.first, fmt::format("service '{}'", svc.name), kKeys);
      }
    }
    // The agents (fleet-agent, protect-agent) run as the user who loads the file and act
    // on that user's segments only: a service of another user would be acted on as the
    // loader, in the loader's segments (or never served).
    if (!svc.user.empty() && (svc.fleet.present || svc.protect.present))
      error(svc.user_mark, fmt::format("service '{}' has 'user: {}' and '{}:': its agent runs as the user who loads "
                                       "the file and serves that user's services only; load it as {} (without "
                                       "'user:')", svc.name, svc.user, svc.fleet.present ? "fleet" : "protect", svc.user));
    // A fleet cap is one host's share of the cap, for all its processes together.
    if (svc.fleet.present) {
      if (scope_given && svc.scope == ShmScope::Process)
        error(scope_mark, "a fleet service's caps hold all its processes together: scope must be service");
      svc.scope = ShmScope::Service;
      // The fleet's caps, grants and the trusted file keep whole units a second.
      for (uint32_t r = 0; r < svc.limits.count && r < svc.rule_marks.size(); ++r)
        if (svc.limits.rules[r].rate_less_micro) {
          char buf[160];
          rule_format(svc.limits.rules[r], buf, sizeof buf);
          error(svc.rule_marks[r], fmt::format("a fleet service's rate is kept in whole units a second: '{}' "
                                               "cannot be a fleet cap (round it, or keep the service off the fleet)",
                                               buf));
        }
    }
    cfg.services.push_back(std::move(svc));
  }

  void top(const YAML::Node& root, Config& cfg) {
    if (!root.IsDefined() || root.IsNull())
      return error(YAML::Mark{}, "the file is empty: it must be a mapping with 'version: 1' and 'services:'");
    if (!root.IsMap()) return error(root.Mark(), "the file must be a mapping with 'version: 1' and 'services:'");
    static const std::vector<std::string_view> kKeys = {"version", "services", "host"};
    bool version = false;
    for (const auto& kv : root) {
      std::string k = kv.first.Scalar();
      if (k == "version") {
        version = true;
        if (!kv.second.IsScalar() || kv.second.Scalar() != "1")
          error(kv.second.Mark(), fmt::format("unsupported version '{}' (this bonsaictl reads version 1)",
                                              kv.second.IsScalar() ? kv.second.Scalar() : ""));
      } else if (k == "services") {
        if (!kv.second.IsMap()) {
          error(kv.second.Mark(), "'services' must be a mapping of service names");
          continue;
        }
        cfg.services.reserve(cfg.services.size() + kv.second.size());  // a ServiceConfig is ~2 KiB: no regrowth
        service_names.reserve(cfg.services.capacity());
        for (const auto& s : kv.second) service(s.first, s.second, cfg);
      } else if (k == "host") {
        host(kv.second, cfg);
      } else {
        unknown_key(kv.first, "the top level", kKeys);
      }
    }
    if (!version) error(root.Mark(), "missing 'version: 1'");
    shares_check(cfg, diags);
    protect_check(cfg, diags);
  }
};

}  // namespace

const ServiceConfig* Config::find(std::string_view name) const {
  for (const auto& s : services)
    if (s.name == name) return &s;
  return nullptr;
}

Config yaml_load_string(const std::string& text, const std::string& file, std::vector<Diag>& diags) {
  Config cfg;
  cfg.file = file;
  size_t first = diags.size();
  auto finish = [&] {  // at most kMaxConfigDiags of this file
    if (diags.size() - first > kMaxConfigDiags) {
      size_t more = diags.size() - first - kMaxConfigDiags;
      diags.resize(first + kMaxConfigDiags);
      diags.push_back(Diag{file, 0, 0, fmt::format("{} more error{} not shown", more, more == 1 ? "" : "s")});
    }
    return cfg;
  };
  if (text.size() > kMaxConfigBytes) {
    diags.push_back(Diag{file, 0, 0, fmt::format("more than {} bytes: not a configuration", kMaxConfigBytes)});
    return cfg;
  }
  if (!yaml_strict_scan(text, file, kMaxConfigNodes, diags)) return finish();
  try {
    YAML::Node root = YAML::Load(text);
    Loader{file, diags}.top(root, cfg);
  } catch (const YAML::Exception& e) {  // a conversion the schema checks missed
    diags.push_back(diag_at(file, e.mark.is_null() ? YAML::Mark{} : e.mark, e.msg));
  }
  return finish();
}

Config yaml_load_file(const std::string& path, std::vector<Diag>& diags) {
  Config cfg{path, {}};
  auto fail = [&](std::string why) {
    diags.push_back(Diag{path, 0, 0, std::move(why)});
    return cfg;
  };
  std::string text;
  if (std::string why = yaml_file_read(path, kMaxConfigBytes, text); !why.empty()) return fail(std::move(why));
  size_t before = diags.size();
  cfg = yaml_load_string(text, path, diags);
  if (diags.size() == before) fleet_files_check(cfg, diags);
  return cfg;
}

}  // namespace bonsai::ctl
