// SPDX-License-Identifier: MIT
// The `compression:` section of a service: destinations ("ADDR[/PREFIX]:PORT|*"),
// accept, policy and levels, each checked with its line and column.
#include <fmt/core.h>

#include "compress/compress_config.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

// The library's own grammar (libbonsai/compress/grammar.cc): what `check` accepts is
// exactly what the library accepts at run time.
std::string compression_target_problem(std::string_view t) {
  std::string text(t);
  compress::CompressConfig cfg{};
  if (text.empty() || text.find(',') != std::string::npos)
    return fmt::format("bad address '{}': expected ADDR[/PREFIX]:PORT, ADDR:* or [IPV6]:PORT", t);
  if (const char* err = compress::dests_parse(text.c_str(), cfg))
    return fmt::format("bad address '{}': {} (ADDR[/PREFIX]:PORT, ADDR:* or [IPV6]:PORT)", t, err);
  return {};
}

std::string compression_level_problem(std::string_view level) {
  std::string text(level);
  compress::LevelList l{};
  if (text.empty() || text.find(',') != std::string::npos || compress::levels_parse(text.c_str(), l))
    return fmt::format("unknown compression level '{}' (none, lz4 or zstd:1..19)", level);
  return {};
}

namespace {

// The policy as the library will read it (compress/grammar.cc policy_parse), against
// the section's levels; none given: any level is one.
bool policy_ok(const std::string& p, const std::vector<std::string>& levels) {
  if (p.empty()) return false;  // the library reads an empty setting as the default; a YAML value must name one
  compress::LevelList list{};
  list.levels[list.count++] = {compress::Method::Raw, 0};
  auto add = [&](const std::string& text) {
    compress::LevelList one{};
    if (compress::levels_parse(text.c_str(), one)) return;
    for (uint8_t i = 1; i < one.count && list.count < compress::kMaxLevels; ++i) list.levels[list.count++] = one.levels[i];
  };
  if (!levels.empty()) {
    for (const auto& l : levels) add(l);
  } else if (size_t colon = p.find(':'); colon != std::string::npos) {
    add(p.substr(colon + 1));
  }
  compress::PolicyConfig cfg{};
  return compress::policy_parse(p.c_str(), list, cfg) == nullptr;
}

// "datarate, queue or fixed:LEVEL with LEVEL in levels", from the policy table.
std::string policy_choices() {
  std::string s;
  bool level = false;
  for (size_t i = 0; i < compress::kPolicyCount; ++i) {
    const compress::PolicyName& p = compress::kPolicyNames[i];
    s += i == 0 ? "" : i + 1 == compress::kPolicyCount ? " or " : ", ";
    s += p.name;
    if (p.takes_level) s += ":LEVEL", level = true;
  }
  return level ? s + " with LEVEL in levels" : s;
}

}  // namespace

void compression_load(const YAML::Node& node, const std::string& file, CompressionConfig& out,
                      std::vector<Diag>& diags) {
  out.present = true;
  if (!node.IsMap()) {
    diags.push_back(diag_at(file, node.Mark(), "'compression' must be a mapping (to, accept, policy, levels)"));
    return;
  }
  static const std::vector<std::string_view> kKeys = {"to", "accept", "policy", "levels"};
  YAML::Node policy_node;
  bool has_policy = false;
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    auto list_of = [&](const char* what, std::vector<std::string>& dst, auto problem_of) {
      if (!v.IsSequence()) {
        diags.push_back(diag_at(file, v.Mark(), fmt::format("'{}' must be a list", what)));
        return;
      }
      for (const auto& item : v) {
        std::string s = item.IsScalar() ? item.Scalar() : "";
        if (std::string p = problem_of(s); !p.empty()) diags.push_back(diag_at(file, item.Mark(), p));
        else dst.push_back(s);
      }
    };
    if (key == "to") {
      list_of("to", out.to, compression_target_problem);
    } else if (key == "levels") {
      list_of("levels", out.levels, compression_level_problem);
    } else if (key == "accept") {
      bool b = false;
      if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
        diags.push_back(diag_at(file, v.Mark(), "'accept' must be true or false"));
      out.accept = b;
    } else if (key == "policy") {
      policy_node.reset(v);
      has_policy = true;
      out.policy = v.IsScalar() ? v.Scalar() : "";
    } else {
      std::string_view hint = closest_word(key, kKeys);
      diags.push_back(diag_at(file, kv.first.Mark(),
                              hint.empty() ? fmt::format("unknown key '{}' in compression", key)
                                           : fmt::format("unknown key '{}' in compression (did you mean '{}'?)", key, hint)));
    }
  }
  if (has_policy) {
    const std::string& p = out.policy;
    if (!policy_ok(p, out.levels))
      diags.push_back(diag_at(file, policy_node.Mark(), fmt::format("bad policy '{}' ({})", p, policy_choices())));
  }
}

}  // namespace bonsai::ctl
