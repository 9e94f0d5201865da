// SPDX-License-Identifier: MIT
// The agents' logs (see agent_log.h).
#include "config/agent_log.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/fleet_trusted.h"
#include "config/owned_file.h"
#include "segment/shm_client.h"

namespace bonsai::ctl {
namespace {

constexpr off_t kLogMax = 1 << 20;

}  // namespace

std::string agent_log_path(const std::string& agent) { return fleet_dir() + "/" + agent + ".log"; }

int agent_log_open(const std::string& agent, std::string& why) {
  int dfd = fleet_dir_open(true, why);
  if (dfd < 0) return -1;
  std::string name = agent + ".log";
  struct stat st {};
  if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size > kLogMax)
    renameat(dfd, name.c_str(), dfd, (name + ".1").c_str());  // bounded: the newest ~1 MiB and one older file
  int fd = openat(dfd, name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) why = fmt::format("cannot open {}: {}", agent_log_path(agent), std::strerror(errno));
  else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != static_cast<uid_t>(ctl_uid()))
    why = fmt::format("{} is not a file of the user's", agent_log_path(agent)), close(fd), fd = -1;
  else fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
  close(dfd);
  return fd;
}

std::string agent_log_last(const std::string& agent) {
  std::string why;
  int dfd = fleet_dir_open(false, why);
  if (dfd < 0) return "";
  int fd = openat(dfd, (agent + ".log").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  close(dfd);
  if (fd < 0) return "";
  struct stat st {};
  std::string tail;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == static_cast<uid_t>(ctl_uid())) {
    char buf[4096];
    off_t at = st.st_size > static_cast<off_t>(sizeof buf) ? st.st_size - static_cast<off_t>(sizeof buf) : 0;
    ssize_t n = pread(fd, buf, sizeof buf, at);
    if (n > 0) tail.assign(buf, static_cast<size_t>(n));
  }
  close(fd);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  if (size_t nl = tail.rfind('\n'); nl != std::string::npos) tail.erase(0, nl + 1);
  for (char& c : tail)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, nothing a terminal acts on
  return tail.size() > 300 ? tail.substr(0, 300) + "..." : tail;
}

std::string fleet_not_working(const std::string& service, int agent_pid) {
  std::string log = agent_log_last("fleet-agent");
  std::string where = fmt::format(" (its log: {})", agent_log_path("fleet-agent"));
  FleetTrusted t;
  std::string why;
  int have = fleet_trusted_read(service, t, why);
  if (have < 0) return why + where;
  if (have == 0) return "no trusted fleet configuration for it: `bonsaictl load` its file with this bonsai";
  for (const char* key : {"password_file", "sentinel_password_file"}) {
    const std::string& path = std::string(key) == "password_file" ? t.fleet.password_file : t.fleet.sentinel_password_file;
    if (path.empty()) continue;
    std::string pwhy;
    if (owned_password_read(key, path, pwhy).empty() && !pwhy.empty()) return pwhy + where;
  }
  if (agent_pid <= 0 || (kill(agent_pid, 0) != 0 && errno == ESRCH))
    return fmt::format("no fleet agent runs{} (`bonsaictl load` its file starts one){}",
                       agent_pid > 0 ? fmt::format(" (pid {} is gone)", agent_pid) : "",
                       log.empty() ? "" : fmt::format("; its log's last line: {}", log));
  if (!log.empty()) return fmt::format("the agent's log says: {}{}", log, where);
  return "";
}

}  // namespace bonsai::ctl
