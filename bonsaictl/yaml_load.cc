// SPDX-License-Identifier: MIT
// YAML configuration loader (see yaml_load.h): schema checks with the position of
// every value, limits built with the same grammar and checks as BONSAI_LIMITS.
#include "yaml_load.h"

#include <fmt/core.h>
#include <fstream>
#include <sstream>

#include "abi/limit_parse.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {
namespace {

struct Loader {
  const std::string& file;
  std::vector<Diag>& diags;

  void error(const YAML::Mark& m, std::string msg) { diags.push_back(diag_at(file, m, std::move(msg))); }

  void unknown_key(const YAML::Node& key, std::string_view where, const std::vector<std::string_view>& keys) {
    std::string k = key.Scalar();
    std::string_view hint = k == "on" ? std::string_view("fd") : closest_word(k, keys);
    error(key.Mark(), hint.empty() ? fmt::format("unknown key '{}' in {}", k, where)
                                   : fmt::format("unknown key '{}' in {} (did you mean '{}'?)", k, where, hint));
  }

  // One rule. Calls claimed so far (per call and fd kind) are in `owner` for the
  // "one call in two buckets" check.
  void rule(const YAML::Node& node, ServiceConfig& svc, YAML::Mark owner[kCallCount][kFdKindCount]) {
    if (!node.IsMap()) return error(node.Mark(), "a limit must be a mapping (calls, rate, burst, fd)");
    static const std::vector<std::string_view> kKeys = {"calls", "rate", "burst", "fd"};
    Rule r{};
    r.fd_mask = kAnyFd;
    YAML::Node calls, rate, burst;  // a default Node is a null node: track presence apart
    bool has_calls = false, has_rate = false, has_burst = false;
    for (const auto& kv : node) {
      std::string key = kv.first.Scalar();
      if (key == "calls") calls.reset(kv.second), has_calls = true;
      else if (key == "rate") rate.reset(kv.second), has_rate = true;
      else if (key == "burst") burst.reset(kv.second), has_burst = true;
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
    if (!ok) return;
    if (svc.limits.count == kMaxRules)
      return error(node.Mark(), fmt::format("service '{}' has more than {} limits", svc.name, kMaxRules));
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c) {
        if (!(mask & (CallMask{1} << c))) continue;
        for (size_t k = 0; k < kFdKindCount; ++k) {
          if (!(r.fd_mask & (1u << k))) continue;
          if (owner[c][k].line >= 0) {
            ok = false;
            error(mark, fmt::format("call '{}' is already limited at line {} of service '{}' (each call may be in "
                                    "one bucket)",
                                    call_name(static_cast<CallId>(c)), owner[c][k].line + 1, svc.name));
            break;
          }
        }
      }
    if (!ok) return;
    for (const auto& [mask, mark] : named)
      for (size_t c = 0; c < kCallCount; ++c)
        if (mask & (CallMask{1} << c))
          for (size_t k = 0; k < kFdKindCount; ++k)
            if (r.fd_mask & (1u << k)) owner[c][k] = mark;
    svc.limits.rules[svc.limits.count++] = r;
    svc.rule_marks.push_back(node.Mark());
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
    LimitSet probe{};
    ParseError err;
    if (!limit_parse("read=" + text, probe, err)) return ok = false, error(node.Mark(), err.message);
    r.rate = probe.rules[0].rate;
    r.unit = probe.rules[0].unit;
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
    if (node.IsNull()) return cfg.services.push_back(std::move(svc));
    if (!node.IsMap()) return error(node.Mark(), fmt::format("service '{}' must be a mapping", svc.name));
    static const std::vector<std::string_view> kKeys = {"scope", "limits", "compression"};
    YAML::Mark owner[kCallCount][kFdKindCount];
    for (auto& row : owner)
      for (auto& m : row) m = YAML::Mark::null_mark();
    for (const auto& kv : node) {
      std::string k = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (k == "scope") {
        std::string s = v.IsScalar() ? v.Scalar() : "";
        if (s == "process") svc.scope = ShmScope::Process;
        else if (s == "service") svc.scope = ShmScope::Service;
        else error(v.Mark(), fmt::format("bad scope '{}' (process or service)", s));
      } else if (k == "limits") {
        if (v.IsNull()) continue;
        if (!v.IsSequence()) {
          error(v.Mark(), "'limits' must be a list");
          continue;
        }
        for (const auto& item : v) rule(item, svc, owner);
      } else if (k == "compression") {
        compression_load(v, file, svc.compression, diags);
      } else {
        unknown_key(kv.first, fmt::format("service '{}'", svc.name), kKeys);
      }
    }
    for (const auto& other : cfg.services)
      if (other.name == svc.name) error(key.Mark(), fmt::format("service '{}' defined twice", svc.name));
    cfg.services.push_back(std::move(svc));
  }

  void top(const YAML::Node& root, Config& cfg) {
    if (!root.IsMap()) return error(root.Mark(), "the file must be a mapping with 'version: 1' and 'services:'");
    static const std::vector<std::string_view> kKeys = {"version", "services"};
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
        for (const auto& s : kv.second) service(s.first, s.second, cfg);
      } else {
        unknown_key(kv.first, "the top level", kKeys);
      }
    }
    if (!version) error(root.Mark(), "missing 'version: 1'");
  }
};

}  // namespace

Diag diag_at(const std::string& file, const YAML::Mark& mark, std::string message) {
  if (mark.is_null()) return Diag{file, 0, 0, std::move(message)};
  return Diag{file, mark.line + 1, mark.column + 1, std::move(message)};
}

const ServiceConfig* Config::find(std::string_view name) const {
  for (const auto& s : services)
    if (s.name == name) return &s;
  return nullptr;
}

Config yaml_load_string(const std::string& text, const std::string& file, std::vector<Diag>& diags) {
  Config cfg;
  cfg.file = file;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    diags.push_back(diag_at(file, e.mark, e.msg));
    return cfg;
  }
  Loader{file, diags}.top(root, cfg);
  return cfg;
}

Config yaml_load_file(const std::string& path, std::vector<Diag>& diags) {
  std::ifstream in(path);
  if (!in) {
    diags.push_back(Diag{path, 0, 0, "cannot read the file"});
    return Config{path, {}};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return yaml_load_string(ss.str(), path, diags);
}

}  // namespace bonsai::ctl
