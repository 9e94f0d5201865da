// SPDX-License-Identifier: MIT
// A service's `protect:` (docs/reference/protect.md): the calls whose own durations are
// its health signal, their p99 target and the services whose caps may be lowered for
// it; and the checks across services that refuse what the controller could not hold.
#include <fmt/core.h>
#include <unordered_map>

#include "abi/limit_parse.h"
#include "config/yaml_load.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {

void protect_load(const YAML::Node& node, const std::string& file, ProtectConfig& out, std::vector<Diag>& diags) {
  out.present = true;
  out.mark = node.Mark();
  auto error = [&](const YAML::Mark& m, std::string msg) { diags.push_back(diag_at(file, m, std::move(msg))); };
  if (!node.IsMap()) return error(node.Mark(), "'protect' must be a mapping (calls, p99, squeeze)");
  static const std::vector<std::string_view> kKeys = {"calls", "p99", "squeeze"};
  bool has_calls = false, has_p99 = false, has_squeeze = false;
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    if (key == "calls") {
      has_calls = true;
      std::vector<YAML::Node> items;
      if (v.IsScalar()) items.push_back(v);
      else if (v.IsSequence()) for (const auto& c : v) items.push_back(c);
      if (items.empty()) error(v.Mark(), "'calls' must be a non-empty list of call names");
      for (const auto& item : items) {
        std::string name = item.IsScalar() ? item.Scalar() : "";
        CallMask m = call_mask_from_name(name);
        if (!m) {
          std::string_view hint = call_name_suggest(name);
          error(item.Mark(), hint.empty() ? fmt::format("unknown call '{}'", name)
                                          : fmt::format("unknown call '{}' (did you mean '{}'?)", name, hint));
        } else if (out.calls & m) {
          error(item.Mark(), fmt::format("call '{}' named twice in protect", name));
        } else {
          out.calls |= m;
        }
      }
    } else if (key == "p99") {
      has_p99 = true;
      std::string text = v.IsScalar() ? v.Scalar() : "";
      uint64_t ns = 0;
      if (!duration_parse(text, ns) || ns < kProtectP99MinNs || ns > kProtectP99MaxNs)
        error(v.Mark(), fmt::format("bad p99 '{}' (a duration like 2500us or 3ms, 10us to 10s)", text));
      else out.p99_ns = ns;
    } else if (key == "squeeze") {
      has_squeeze = true;
      std::vector<YAML::Node> items;
      if (v.IsScalar()) items.push_back(v);
      else if (v.IsSequence()) for (const auto& c : v) items.push_back(c);
      if (items.empty()) error(v.Mark(), "'squeeze' must be a non-empty list of service names");
      for (const auto& item : items) {
        std::string name = item.IsScalar() ? item.Scalar() : "";
        if (!shm_service_name_valid(name)) {
          error(item.Mark(), fmt::format("bad service name '{}' in squeeze", name));
          continue;
        }
        bool twice = false;
        for (const auto& s : out.squeeze) twice = twice || s == name;
        if (twice) {
          error(item.Mark(), fmt::format("service '{}' named twice in squeeze", name));
          continue;
        }
        out.squeeze.push_back(name);
        out.squeeze_marks.push_back(item.Mark());
      }
    } else {
      std::string_view hint = closest_word(key, kKeys);
      error(kv.first.Mark(), hint.empty() ? fmt::format("unknown key '{}' in protect", key)
                                          : fmt::format("unknown key '{}' in protect (did you mean '{}'?)", key, hint));
    }
  }
  if (!has_calls) error(node.Mark(), "'protect' needs 'calls' (the calls whose durations are measured)");
  if (!has_p99) error(node.Mark(), "'protect' needs 'p99' (the target, like 2500us)");
  if (!has_squeeze) error(node.Mark(), "'protect' needs 'squeeze' (the services whose caps may be lowered)");
}

void protect_check(const Config& cfg, std::vector<Diag>& diags) {
  bool earlier = !diags.empty();  // a rule refused above would read as "no limits" here
  std::unordered_map<std::string, const ServiceConfig*> by_name;
  for (const auto& s : cfg.services) by_name.emplace(s.name, &s);
  std::unordered_map<std::string, std::string> squeezed_by;  // squeezed -> the protected service
  for (const auto& p : cfg.services) {
    if (!p.protect.present) continue;
    for (size_t i = 0; i < p.protect.squeeze.size(); ++i) {
      const std::string& name = p.protect.squeeze[i];
      const YAML::Mark& mark = p.protect.squeeze_marks[i];
      auto err = [&](std::string msg) { diags.push_back(diag_at(cfg.file, mark, std::move(msg))); };
      auto it = by_name.find(name);
      if (name == p.name) {
        err(fmt::format("service '{}' squeezes itself (its caps would fall with its own latency)", name));
        continue;
      }
      if (it == by_name.end()) {
        err(fmt::format("squeezed service '{}' is not defined in this file", name));
        continue;
      }
      const ServiceConfig& s = *it->second;
      if (auto [at, fresh] = squeezed_by.emplace(name, p.name); !fresh) {
        err(fmt::format("service '{}' is already squeezed by '{}' (two controllers would fight over its caps)", name,
                        at->second));
        continue;
      }
      if (s.protect.present)
        err(fmt::format("service '{}' is protected itself: a protected service is never squeezed", name));
      else if (!s.user.empty() && s.user != p.user)
        err(fmt::format("service '{}' has 'user: {}': the protect-agent acts on its own user's services only "
                        "(load each user's protected services as that user)", name, s.user));
      else if (s.limits.count == 0) {
        if (!earlier) err(fmt::format("service '{}' has no limits: there is no cap to lower", name));
      } else if (s.fleet.present)
        err(fmt::format("service '{}' has fleet caps: its rates are leased from the store, not lowered on one host",
                        name));
      else
        for (uint32_t r = 0; r < s.limits.count; ++r)
          if (rule_ceil_above(s.limits.rules[r])) {
            err(fmt::format("service '{}' has a ceil (line {}): borrowing would undo a lowered rate", name,
                            r < s.rule_marks.size() ? s.rule_marks[r].line + 1 : 0));
            break;
          }
    }
  }
}

}  // namespace bonsai::ctl
