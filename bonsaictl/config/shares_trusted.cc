// SPDX-License-Identifier: MIT
// The trusted copy of shares (see shares_trusted.h): `KEY RULE` lines in the limit
// language, one rule each, read back with the checks of any trusted file (owned_file.h).
#include "config/shares_trusted.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sstream>
#include <unistd.h>

#include "abi/limit_parse.h"
#include "config/fleet_trusted.h"
#include "config/owned_file.h"
#include "config/yaml_load.h"
#include "segment/shm_client.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {
namespace {

constexpr const char* kMagic = "bonsai-shares-trusted 1";
constexpr const char* kName = "shares";
constexpr size_t kMaxBytes = 4 * 1024 * 1024;

std::string text_of(const Rule& r) {
  char buf[512];
  rule_format(r, buf, sizeof buf);
  return buf;
}

bool add_rule(LimitSet& set, const std::string& text) {
  LimitSet one{};
  ParseError err;
  if (!limit_parse(text, one, err) || one.count != 1 || set.count >= kMaxRules) return false;
  set.rules[set.count++] = one.rules[0];
  return true;
}

}  // namespace

int shares_trusted_read(SharesTrusted& out, std::string& why) {
  out = SharesTrusted{};
  int dfd = fleet_dir_open(false, why);
  if (dfd < 0) {
    if (why.find("does not exist") != std::string::npos) return why.clear(), 0;
    return -1;
  }
  std::string text;
  int err = 0;
  why = owned_file_read(dfd, kName, static_cast<uid_t>(ctl_uid()), true, kMaxBytes, text, &err);
  close(dfd);
  if (err == ENOENT) return why.clear(), 0;
  if (!why.empty()) return why = fmt::format("{}: {}", fleet_dir(), why), -1;
  std::istringstream in(text);
  std::string line;
  bool ok = std::getline(in, line) && line == kMagic;
  for (int n = 2; ok && std::getline(in, line); ++n) {
    if (line.rfind("capacity ", 0) == 0) {
      out.has_capacity = true;
      ok = add_rule(out.capacity, line.substr(9));
    } else if (line.rfind("svc ", 0) == 0) {
      size_t sp = line.find(' ', 4);
      std::string name = line.substr(4, sp == std::string::npos ? std::string::npos : sp - 4);
      ok = sp != std::string::npos && shm_service_name_valid(name);
      LimitSet& set = out.services[name];
      if (ok && line.substr(sp + 1) != "none") ok = add_rule(set, line.substr(sp + 1));
    } else {
      ok = false;
    }
    if (!ok) why = fmt::format("{}/{}:{}: not a line of a trusted shares file: `load` its file again", fleet_dir(), kName, n);
  }
  if (!ok && why.empty()) why = fmt::format("{}/{}: not a trusted shares file of this bonsai", fleet_dir(), kName);
  return ok ? 1 : -1;
}

std::string shares_trusted_write(const SharesTrusted& t) {
  std::string text = fmt::format("{}\n", kMagic);
  if (t.has_capacity)
    for (uint32_t r = 0; r < t.capacity.count; ++r) text += fmt::format("capacity {}\n", text_of(t.capacity.rules[r]));
  for (const auto& [name, set] : t.services) {
    if (!set.count) text += fmt::format("svc {} none\n", name);
    for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r) text += fmt::format("svc {} {}\n", name, text_of(set.rules[r]));
  }
  std::string why;
  int dfd = fleet_dir_open(true, why);
  if (dfd < 0) return why;
  std::string tmp = fmt::format(".tmp.{}.{}", kName, getpid());
  unlinkat(dfd, tmp.c_str(), 0);
  int fd = openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    why = fmt::format("cannot write {}/{}: {}", fleet_dir(), tmp, std::strerror(errno));
    close(dfd);
    return why;
  }
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = close(fd) == 0 && ok;
  if (!ok || renameat(dfd, tmp.c_str(), dfd, kName) != 0) {
    why = fmt::format("cannot write {}/{}: {}", fleet_dir(), kName, std::strerror(errno));
    unlinkat(dfd, tmp.c_str(), 0);
  }
  close(dfd);
  return why;
}

std::string shares_trusted_problem(const SharesTrusted& t, const std::string& service, const LimitSet& next) {
  // The same check as a file's (yaml_shares.cc), over the services as they are installed.
  Config cfg;
  cfg.file = "set";
  cfg.has_host = t.has_capacity;
  if (t.has_capacity) cfg.capacity = t.capacity, cfg.capacity_marks.assign(t.capacity.count, YAML::Mark{});
  auto add = [&](const std::string& name, const LimitSet& set) {
    ServiceConfig s;
    s.name = name;
    s.limits = set;
    s.rule_marks.assign(set.count, YAML::Mark{});
    cfg.services.push_back(std::move(s));
  };
  add(service, next);
  for (const auto& [name, set] : t.services)
    if (name != service) add(name, set);
  std::vector<Diag> diags;
  shares_check(cfg, diags);
  std::string why;
  for (const Diag& d : diags) why += (why.empty() ? "" : "; ") + d.message;
  return why;
}

}  // namespace bonsai::ctl
