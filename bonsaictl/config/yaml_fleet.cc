// SPDX-License-Identifier: MIT
// The `fleet:` section of a service (docs/reference/fleet.md): the store, the lease
// period, an optional password file, namespace and expected host count,
// each checked with its line and column. With
// it the service's limits are caps of the whole fleet, and its scope is `service`.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/fleet_abi.h"
#include "abi/limit_parse.h"
#include "config/fleet_store.h"
#include "config/owned_file.h"
#include "config/yaml_load.h"

namespace bonsai::ctl {

// `sentinel_password_file` goes with a redis+sentinel store (the Sentinels' AUTH).
static void fleet_sentinel_check(const YAML::Node& node, const std::string& file, const FleetConfig& out,
                                 std::vector<Diag>& diags) {
  if (out.sentinel_password_file.empty()) return;
  FleetStore s;
  if (!out.store.empty() && fleet_store_parse(out.store, s).empty() && !s.sentinel())
    diags.push_back(diag_at(file, node["sentinel_password_file"].Mark(),
                            "sentinel_password_file needs a store: redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME"));
}

void fleet_load(const YAML::Node& node, const std::string& file, FleetConfig& out, std::vector<Diag>& diags) {
  out.present = true;
  if (!node.IsMap()) {
    diags.push_back(diag_at(file, node.Mark(), "'fleet' must be a mapping (store, period, password_file, sentinel_password_file, namespace, expected_hosts)"));
    return;
  }
  static const std::vector<std::string_view> kKeys = {"store", "period", "password_file", "sentinel_password_file", "namespace",
                                                          "expected_hosts"};
  bool has_store = false;
  for (const auto& kv : node) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    std::string text = v.IsScalar() ? v.Scalar() : "";
    if (key == "store") {
      has_store = true;
      FleetStore s;
      if (std::string p = fleet_store_parse(text, s); !p.empty()) diags.push_back(diag_at(file, v.Mark(), p));
      else out.store = text;
    } else if (key == "period") {
      uint64_t ns = 0;
      if (!duration_parse(text, ns) || ns < kFleetPeriodMinMs * 1'000'000 || ns > kFleetPeriodMaxMs * 1'000'000 ||
          ns % 1'000'000)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad period '{}' (whole milliseconds, {}ms to {}s)", text,
                                                            kFleetPeriodMinMs, kFleetPeriodMaxMs / 1000)));
      else out.period_ms = static_cast<uint32_t>(ns / 1'000'000);
    } else if (key == "namespace") {
      // Part of every key (fleet_script.h): no ':' or braces, so one namespace's keys
      // match one ACL pattern (~bonsai:fleet:NAME:*) and nobody else's.
      bool ok = !text.empty() && text.size() < kFleetNamespaceMax;
      for (char c : text)
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                    c == '_');
      if (!ok)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad namespace '{}' (1-{} of A-Z a-z 0-9 . - _)", text,
                                                            kFleetNamespaceMax - 1)));
      else out.fleet_namespace = text == "default" ? "" : text;
    } else if (key == "expected_hosts") {
      uint64_t n = 0;
      bool ok = !text.empty() && text.size() <= 7;
      for (char c : text) ok = ok && c >= '0' && c <= '9', n = n * 10 + static_cast<uint64_t>(c - '0');
      if (!ok || n < 1 || n > kFleetExpectedHostsMax)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad expected_hosts '{}' (a whole number, 1 to {})", text,
                                                            kFleetExpectedHostsMax)));
      else out.expected_hosts = static_cast<uint32_t>(n);
    } else if (key == "password_file" || key == "sentinel_password_file") {
      if (text.empty() || text[0] != '/' || text.size() >= kFleetPathMax)
        diags.push_back(diag_at(file, v.Mark(), fmt::format("bad {} '{}' (an absolute path, at most {} bytes)", key,
                                                            text, kFleetPathMax - 1)));
      else if (key == "password_file") out.password_file = text, out.password_mark = v.Mark();
      else out.sentinel_password_file = text, out.sentinel_password_mark = v.Mark();
    } else {
      std::string_view hint = closest_word(key, kKeys);
      diags.push_back(diag_at(file, kv.first.Mark(),
                              hint.empty() ? fmt::format("unknown key '{}' in fleet", key)
                                           : fmt::format("unknown key '{}' in fleet (did you mean '{}'?)", key, hint)));
    }
  }
  if (!has_store) diags.push_back(diag_at(file, node.Mark(), "'fleet' needs 'store: redis://HOST:PORT' (or redis+sentinel://HOST:PORT,.../MASTER_NAME)"));
  FleetStore s;
  if (!out.store.empty() && fleet_store_parse(out.store, s).empty() && !s.user.empty() && out.password_file.empty())
    diags.push_back(diag_at(file, node["store"].Mark(),
                            fmt::format("store user '{}' needs password_file (AUTH {} PASSWORD)", s.user, s.user)));
  fleet_sentinel_check(node, file, out, diags);
}

void fleet_files_check(const Config& cfg, std::vector<Diag>& diags) {
  struct File {
    const char* key;
    const std::string& path;
    const YAML::Mark& mark;
  };
  for (const auto& s : cfg.services) {
    if (!s.fleet.present) continue;
    const FleetConfig& fc = s.fleet;
    for (const File& f : {File{"password_file", fc.password_file, fc.password_mark},
                          File{"sentinel_password_file", fc.sentinel_password_file, fc.sentinel_password_mark}}) {
      if (f.path.empty()) continue;
      // As the agent will open it: no symlink followed, the owner and mode of what was opened.
      int fd = open(f.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      std::string why;
      struct stat st {};
      if (fd < 0)
        why = errno == ELOOP ? fmt::format("{} {} is a symbolic link: name the file itself", f.key, f.path)
                             : fmt::format("{} {}: {} (the fleet agent reads its first line for AUTH)", f.key, f.path,
                                           std::strerror(errno));
      else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = fmt::format("{} {} is not a regular file", f.key, f.path);
      else if (std::string p = owned_problem(f.path, st.st_uid, st.st_mode, geteuid(), true); !p.empty())
        why = fmt::format("{} {} (the fleet agent runs as the user who loads the file)", f.key, p);
      if (fd >= 0) close(fd);
      if (!why.empty()) diags.push_back(diag_at(cfg.file, f.mark, why));
    }
  }
}

}  // namespace bonsai::ctl
