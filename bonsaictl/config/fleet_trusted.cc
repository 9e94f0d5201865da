// SPDX-License-Identifier: MIT
// The trusted fleet configuration's files (see fleet_trusted.h). One file per service,
// `svc.<SERVICE>`, lines of `KEY VALUE`; written by its owner only, read back with the
// same checks as any configuration a privileged component takes (owned_file.h).
#include "config/fleet_trusted.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/fleet_abi.h"
#include "abi/limit_parse.h"
#include "config/fleet_store.h"
#include "config/owned_file.h"
#include "segment/shm_client.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {

namespace {

constexpr const char* kMagic = "bonsai-fleet-trusted 1";
constexpr size_t kMaxTrustedBytes = 64 * 1024;

std::string file_name(const std::string& service) { return "svc." + service; }

bool u64_of(const std::string& s, uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (*end || errno || s[0] == '-') return false;
  v = n;
  return true;
}

bool namespace_ok(const std::string& ns) {
  if (ns.size() >= kFleetNamespaceMax) return false;
  for (char c : ns)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
      return false;
  return true;
}

// Parses a trusted file's text. @return "" or the first bad line.
std::string parse(const std::string& text, FleetTrusted& out) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return "not a trusted fleet file of this bonsai";
  out.fleet.present = true;
  int n = 1;
  bool store = false;
  while (std::getline(in, line)) {
    ++n;
    size_t sp = line.find(' ');
    std::string key = line.substr(0, sp), val = sp == std::string::npos ? "" : line.substr(sp + 1);
    uint64_t v = 0;
    bool ok = true;
    if (key == "service") {
      ok = val == out.service;
    } else if (key == "store") {
      FleetStore s;
      ok = fleet_store_parse(val, s).empty();
      out.fleet.store = val, store = ok;
    } else if (key == "password_file") {
      ok = !val.empty() && val[0] == '/' && val.size() < kFleetPathMax;
      out.fleet.password_file = val;
    } else if (key == "sentinel_password_file") {
      ok = !val.empty() && val[0] == '/' && val.size() < kFleetPathMax;
      out.fleet.sentinel_password_file = val;
    } else if (key == "namespace") {
      ok = namespace_ok(val);
      out.fleet.fleet_namespace = val;
    } else if (key == "period_ms") {
      ok = u64_of(val, v) && v >= kFleetPeriodMinMs && v <= kFleetPeriodMaxMs;
      out.fleet.period_ms = static_cast<uint32_t>(v);
    } else if (key == "expected_hosts") {
      ok = u64_of(val, v) && v <= kFleetExpectedHostsMax;
      out.fleet.expected_hosts = static_cast<uint32_t>(v);
    } else if (key == "segment") {
      std::string a = val.substr(0, val.find(' ')), b = val.find(' ') == std::string::npos ? "" : val.substr(val.find(' ') + 1);
      ok = u64_of(a, out.seg_dev) && u64_of(b, out.seg_ino);
    } else if (key == "rule") {
      // calls(hex) rate burst unit fd_mask ceil host1
      std::istringstream r(val);
      std::string calls;
      uint64_t rate = 0, burst = 0, unit = 0, fd = 0, ceil = 0, host1 = 0;
      ok = static_cast<bool>(r >> calls >> rate >> burst >> unit >> fd >> ceil >> host1) && out.rules.count < kMaxRules;
      char* end = nullptr;
      uint64_t mask = ok ? std::strtoull(calls.c_str(), &end, 16) : 0;
      ok = ok && end && !*end && mask && rate >= 1 && rate <= kMaxRate && unit <= 1 && fd <= 0xff && host1 <= 0xff;
      if (ok) {
        Rule& rule = out.rules.rules[out.rules.count++];
        rule = Rule{};
        rule.calls = static_cast<CallMask>(mask);
        rule.rate = rate, rule.burst = burst, rule.ceil = ceil;
        rule.unit = unit ? RateUnit::Calls : RateUnit::Bytes;
        rule.fd_mask = static_cast<uint8_t>(fd), rule.host1 = static_cast<uint8_t>(host1);
      }
    } else if (!key.empty()) {
      ok = false;
    }
    if (!ok) return fmt::format("line {} ('{}') is not valid", n, line.substr(0, 80));
  }
  if (!store) return "it names no store";
  if (out.rules.count == 0) return "it names no rule";
  return {};
}

}  // namespace

std::string fleet_dir() { return fmt::format("/dev/shm/{}bonsai-fleet.{}.d", shm_prefix(), ctl_uid()); }

int fleet_dir_open(bool create, std::string& why) {
  return owned_dir_open(fleet_dir(), static_cast<uid_t>(ctl_uid()), create && !ctl_other_user(), why);
}

FleetTrusted fleet_trusted_of(const ServiceConfig& svc) {
  FleetTrusted t;
  t.service = svc.name;
  t.fleet = svc.fleet;
  t.rules = svc.limits;
  return t;
}

std::string fleet_trusted_write(const ServiceConfig& svc, int seg_fd) {
  struct stat st {};
  if (fstat(seg_fd, &st) != 0) return fmt::format("cannot stat the segment of {}: {}", svc.name, std::strerror(errno));
  std::string text = fmt::format("{}\nservice {}\nstore {}\n", kMagic, svc.name, svc.fleet.store);
  if (!svc.fleet.password_file.empty()) text += fmt::format("password_file {}\n", svc.fleet.password_file);
  if (!svc.fleet.sentinel_password_file.empty())
    text += fmt::format("sentinel_password_file {}\n", svc.fleet.sentinel_password_file);
  if (!svc.fleet.fleet_namespace.empty()) text += fmt::format("namespace {}\n", svc.fleet.fleet_namespace);
  text += fmt::format("period_ms {}\nexpected_hosts {}\nsegment {} {}\n", svc.fleet.period_ms, svc.fleet.expected_hosts,
                      static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
  for (uint32_t r = 0; r < svc.limits.count; ++r) {
    const Rule& rule = svc.limits.rules[r];
    text += fmt::format("rule {:x} {} {} {} {} {} {}\n", static_cast<uint64_t>(rule.calls), rule.rate, rule.burst,
                        rule.unit == RateUnit::Calls ? 1 : 0, unsigned{rule.fd_mask}, rule.ceil, unsigned{rule.host1});
  }
  std::string why;
  int dfd = fleet_dir_open(true, why);
  if (dfd < 0) return why;
  std::string tmp = fmt::format(".tmp.{}.{}", svc.name, getpid());
  unlinkat(dfd, tmp.c_str(), 0);
  int fd = openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    why = fmt::format("cannot write {}/{}: {}", fleet_dir(), tmp, std::strerror(errno));
    close(dfd);
    return why;
  }
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = close(fd) == 0 && ok;
  if (!ok || renameat(dfd, tmp.c_str(), dfd, file_name(svc.name).c_str()) != 0) {
    why = fmt::format("cannot write {}/{}: {}", fleet_dir(), file_name(svc.name), std::strerror(errno));
    unlinkat(dfd, tmp.c_str(), 0);
  }
  close(dfd);
  return why;
}

void fleet_trusted_remove(const std::string& service) {
  std::string why;
  int dfd = fleet_dir_open(false, why);
  if (dfd < 0) return;  // no directory of ours: no file of ours either
  unlinkat(dfd, file_name(service).c_str(), 0);
  close(dfd);
}

int fleet_trusted_read(const std::string& service, FleetTrusted& out, std::string& why) {
  out = FleetTrusted{};
  out.service = service;
  if (!shm_service_name_valid(service)) return why = fmt::format("bad service name '{}'", service), -1;
  int dfd = fleet_dir_open(false, why);
  if (dfd < 0) {
    if (why.find("does not exist") != std::string::npos) return why.clear(), 0;
    return -1;
  }
  std::string text;
  int err = 0;
  why = owned_file_read(dfd, file_name(service), static_cast<uid_t>(ctl_uid()), true, kMaxTrustedBytes, text, &err);
  close(dfd);
  if (err == ENOENT) return why.clear(), 0;
  if (!why.empty()) return why = fmt::format("{}: {}", fleet_dir(), why), -1;
  if (std::string p = parse(text, out); !p.empty())
    return why = fmt::format("{}/{}: {}: `load` its file again", fleet_dir(), file_name(service), p), -1;
  out.text = std::move(text);
  return 1;
}

std::vector<std::string> fleet_trusted_list(std::string& why) {
  std::vector<std::string> out;
  int dfd = fleet_dir_open(false, why);
  if (dfd < 0) {
    if (why.find("does not exist") != std::string::npos) why.clear();
    return out;
  }
  DIR* d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return out;
  }
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("svc.", 0) == 0 && shm_service_name_valid(n.substr(4))) out.push_back(n.substr(4));
    if (out.size() >= 100'000) break;
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

bool fleet_trusted_matches(const FleetTrusted& t, int seg_fd) {
  if (t.seg_dev == 0 && t.seg_ino == 0) return true;
  struct stat st {};
  return fstat(seg_fd, &st) == 0 && static_cast<uint64_t>(st.st_dev) == t.seg_dev &&
         static_cast<uint64_t>(st.st_ino) == t.seg_ino;
}

}  // namespace bonsai::ctl
