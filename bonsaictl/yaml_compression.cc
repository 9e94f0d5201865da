// SPDX-License-Identifier: MIT
// The `compression:` section of a service: destinations ("ADDR[/PREFIX]:PORT|*"),
// accept, policy and levels, each checked with its line and column.
#include <arpa/inet.h>
#include <charconv>
#include <fmt/core.h>

#include "yaml_load.h"

namespace bonsai::ctl {
namespace {

bool parse_uint(std::string_view s, unsigned max, unsigned& out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc{} && r.ptr == s.data() + s.size() && out <= max;
}

}  // namespace

std::string compression_target_problem(std::string_view t) {
  size_t colon = t.rfind(':');
  if (colon == std::string_view::npos) return fmt::format("bad address '{}': expected ADDR[/PREFIX]:PORT or ADDR:*", t);
  std::string_view host = t.substr(0, colon), port = t.substr(colon + 1);
  unsigned n;
  if (port != "*" && (!parse_uint(port, 65535, n) || n == 0))
    return fmt::format("bad address '{}': port '{}' must be 1-65535 or *", t, port);
  std::string_view prefix;
  if (size_t slash = host.find('/'); slash != std::string_view::npos) {
    prefix = host.substr(slash + 1);
    host = host.substr(0, slash);
  }
  bool v6 = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (v6) host = host.substr(1, host.size() - 2);
  std::string h(host);
  unsigned char buf[16];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, h.c_str(), buf) != 1)
    return fmt::format("bad address '{}': '{}' is not an IPv{} address", t, host, v6 ? 6 : 4);
  if (!prefix.empty() || t.find('/') != std::string_view::npos) {
    if (!parse_uint(prefix, v6 ? 128 : 32, n))
      return fmt::format("bad address '{}': prefix length '{}' must be 0-{}", t, prefix, v6 ? 128 : 32);
  }
  return {};
}

std::string compression_level_problem(std::string_view level) {
  if (level == "none" || level == "lz4") return {};
  unsigned n;
  if (level.substr(0, 5) == "zstd:" && parse_uint(level.substr(5), 22, n) && n >= 1) return {};
  return fmt::format("unknown compression level '{}' (none, lz4 or zstd:1..22)", level);
}

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
    bool ok = p == "datarate" || p == "queue";
    if (p.rfind("fixed:", 0) == 0) {
      ok = compression_level_problem(p.substr(6)).empty();
      if (ok && !out.levels.empty()) {
        ok = false;
        for (const auto& l : out.levels) ok = ok || l == p.substr(6);
      }
    }
    if (!ok)
      diags.push_back(diag_at(file, policy_node.Mark(),
                              fmt::format("bad policy '{}' (datarate, queue or fixed:LEVEL with LEVEL in levels)", p)));
  }
}

}  // namespace bonsai::ctl
