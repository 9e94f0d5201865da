// SPDX-License-Identifier: MIT
// The fleet agent's status file (see fleet_status.h).
#include "stat/fleet_status.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include "segment/shm_client.h"
#include "segment/target_user.h"

namespace bonsai::ctl {

namespace {

constexpr size_t kStatusMax = 4096;

// The service's file name, or "" for a name that could leave the directory.
std::string status_name(const std::string& service) {
  if (service.empty() || service.size() > 200 || service[0] == '.') return {};
  for (char c : service)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'))
      return {};
  return "status." + service;
}

// The agent's directory, opened without following a link and checked: the user's own, 0700.
int dir_open() {
  int dfd = open(fleet_status_dir().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return -1;
  struct stat st {};
  if (fstat(dfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 0077)) {
    close(dfd);
    return -1;
  }
  return dfd;
}

std::string to_text(const FleetAgentStatus& s) {
  nlohmann::ordered_json j = {{"primary", s.node.primary},
                              {"sentinel", s.node.sentinel},
                              {"failovers", s.node.failovers},
                              {"last_failover_unix_ns", s.node.last_failover_unix_ns},
                              {"last_failover_from", s.node.last_from},
                              {"last_failover_to", s.node.last_to},
                              {"last_failover_reason", s.node.last_reason},
                              {"fallback_total_ms", s.fallback_total_ms},
                              {"fallback_last_ms", s.fallback_last_ms},
                              {"fallback_since_unix_ns", s.fallback_since_unix_ns},
                              {"written_unix_ns", s.written_unix_ns},
                              {"agent_pid", s.agent_pid}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string fleet_status_dir() { return fmt::format("/dev/shm/{}bonsai-fleet.{}.d", shm_prefix(), ctl_uid()); }

void FleetStatusFile::update(const std::string& service, const StoreNodeStatus& node, bool lapsed,
                             uint64_t lapse_start_mono_ns, uint64_t now_mono_ns) {
  std::string name = status_name(service);
  if (name.empty()) return;
  uint64_t unix_now = unix_now_ns();
  if (lapsed && !since_mono_ns_) since_mono_ns_ = lapse_start_mono_ns && lapse_start_mono_ns <= now_mono_ns ? lapse_start_mono_ns : now_mono_ns;
  if (!lapsed && since_mono_ns_) {
    st_.fallback_last_ms = (now_mono_ns - since_mono_ns_) / 1'000'000;
    st_.fallback_total_ms += st_.fallback_last_ms;
    since_mono_ns_ = 0;
  }
  FleetAgentStatus out = st_;
  out.node = node;
  out.agent_pid = static_cast<int>(getpid());
  if (since_mono_ns_) {
    out.fallback_since_unix_ns = unix_now - (now_mono_ns - since_mono_ns_);
    out.fallback_total_ms += (now_mono_ns - since_mono_ns_) / 1'000'000;
  }
  std::string text = to_text(out);  // without the time written: "changed" means the state did
  if (text == last_text_ && now_mono_ns - written_mono_ns_ < 1'000'000'000) return;
  last_text_ = text;
  written_mono_ns_ = now_mono_ns;
  out.written_unix_ns = unix_now;
  text = to_text(out);
  int dfd = dir_open();
  if (dfd < 0) return;
  // Written beside and renamed over: a reader sees the old file or the new one whole.
  std::string tmp = name + ".tmp";
  int fd = openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!ok || renameat(dfd, tmp.c_str(), dfd, name.c_str()) != 0) unlinkat(dfd, tmp.c_str(), 0);
  }
  close(dfd);
}

bool fleet_status_read(const std::string& service, FleetAgentStatus& out) {
  out = FleetAgentStatus{};
  std::string name = status_name(service);
  if (name.empty()) return false;
  int dfd = dir_open();
  if (dfd < 0) return false;
  int fd = openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  close(dfd);
  if (fd < 0) return false;
  struct stat st {};
  char buf[kStatusMax + 1];
  ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() ? read(fd, buf, sizeof buf) : -1;
  close(fd);
  if (n <= 0 || static_cast<size_t>(n) > kStatusMax) return false;
  auto j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  auto str = [&](const char* k, std::string& v) {
    if (j.contains(k) && j[k].is_string() && j[k].get<std::string>().size() <= 300) v = j[k].get<std::string>();
  };
  auto num = [&](const char* k, uint64_t& v) {
    if (j.contains(k) && j[k].is_number_unsigned()) v = j[k].get<uint64_t>();
  };
  str("primary", out.node.primary);
  str("sentinel", out.node.sentinel);
  str("last_failover_from", out.node.last_from);
  str("last_failover_to", out.node.last_to);
  str("last_failover_reason", out.node.last_reason);
  num("failovers", out.node.failovers);
  num("last_failover_unix_ns", out.node.last_failover_unix_ns);
  num("fallback_total_ms", out.fallback_total_ms);
  num("fallback_last_ms", out.fallback_last_ms);
  num("fallback_since_unix_ns", out.fallback_since_unix_ns);
  num("written_unix_ns", out.written_unix_ns);
  uint64_t pid = 0;
  num("agent_pid", pid);
  out.agent_pid = pid < 4'194'304 ? static_cast<int>(pid) : 0;
  // Still on the fallback: the episode so far, to now.
  uint64_t now = unix_now_ns();
  if (out.fallback_since_unix_ns && now > out.written_unix_ns && out.written_unix_ns)
    out.fallback_total_ms += (now - out.written_unix_ns) / 1'000'000;
  return true;
}

}  // namespace bonsai::ctl
