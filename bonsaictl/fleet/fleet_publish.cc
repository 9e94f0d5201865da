// SPDX-License-Identifier: MIT
// The fleet block at `run`/`load` time, and starting an agent (see fleet_publish.h).
#include "fleet/fleet_publish.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <cstdio>
#include <cstdlib>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bucket/fleet_lease.h"
#include "config/agent_log.h"
#include "config/fleet_trusted.h"
#include "sys/clock.h"

namespace bonsai::ctl {

std::string fleet_lock_dir() { return fleet_dir(); }
std::string fleet_lock_path() { return fleet_lock_dir() + "/lock"; }

int fleet_lock_open(std::string& why) {
  // The directory's owner, mode and type checked on what was opened (owned_file.h): no
  // window between the check and the use; another user cannot have made it.
  int dfd = fleet_dir_open(true, why);
  if (dfd < 0) return -1;
  uid_t me = geteuid();
  int fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  int err = errno;
  close(dfd);
  if (fd < 0) return why = fmt::format("cannot open {}: {}", fleet_lock_path(), std::strerror(err)), -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_uid != me || !S_ISREG(st.st_mode)) {
    close(fd);
    return why = fmt::format("{} is not a file of uid {}: remove it and try again", fleet_lock_path(), me), -1;
  }
  return fd;
}

int fleet_ready_fd_take() {
  const char* v = std::getenv("BONSAI_FLEET_READY_FD");
  int fd = -1;
  if (v && *v) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n > 2 && n < 65536 && fcntl(static_cast<int>(n), F_GETFD) >= 0) fd = static_cast<int>(n);
  }
  unsetenv("BONSAI_FLEET_READY_FD");
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

void fleet_ready_tell(int& fd, const std::string& line) {
  if (fd < 0) return;
  std::string l = line + "\n";
  if (write(fd, l.data(), l.size()) < 0) {}  // the starter left: nobody to tell
  close(fd);
  fd = -1;
}

LimitSet fleet_publish(Segment& seg, const ServiceConfig& svc, std::string& problem) {
  ShmFleet& f = seg.seg().fleet;
  LimitSet out = svc.limits;
  if (!svc.fleet.present) {
    // No longer a fleet service: the agent leaves it. Only the file written for this very
    // segment: another user's service of the same name (`user:`) is not this one.
    FleetTrusted old;
    std::string why;
    if (fleet_trusted_read(svc.name, old, why) == 1 && fleet_trusted_matches(old, seg.fd()))
      fleet_trusted_remove(svc.name);
  } else {
    if (ctl_other_user())  // the agent serves its own user's services only
      usage_error(fmt::format("service '{}' has fleet caps: load or run it as its own user, not with --user", svc.name));
    // The agent's configuration goes where only this user can write: the segment's
    // copy below is for `stat` and the library, never read back by a privileged reader.
    // Not written (its directory squatted): the segment still gets its fallback, and the
    // caller fails loudly, as when no agent can run.
    if (std::string why = fleet_trusted_write(svc, seg.fd()); !why.empty() && problem.empty()) problem = why;
  }
  seg.guarded([&] {
    // What only the agent used (0.2.0 wrote them here): empty, so that nothing reads them.
    for (size_t i = 0; i < kFleetStoreMax; ++i) f.store[i] = '\0';
    for (size_t i = 0; i < kFleetPathMax; ++i) f.password_file[i] = '\0';
    for (size_t i = 0; i < kFleetNamespaceMax; ++i) f.fleet_namespace[i] = '\0';
    f.period_ms.store(0, std::memory_order_relaxed);
    f.expected_hosts.store(0, std::memory_order_relaxed);
    if (!svc.fleet.present) {
      f.enabled.store(0, std::memory_order_relaxed);
      f.lease_expiry_ns.store(0, std::memory_order_release);  // no lease: the limits apply as written
      for (uint32_t r = 0; r < kMaxRules; ++r) f.cap[r].store(0, std::memory_order_relaxed);
      return;
    }
    uint32_t live = f.live_hosts.load(std::memory_order_relaxed);
    if (live > kFleetExpectedHostsMax) live = 0;  // untrusted: as if none were known
    for (uint32_t r = 0; r < kMaxRules; ++r) {
      uint64_t cap = r < svc.limits.count ? svc.limits.rules[r].rate : 0;
      uint64_t fb = cap ? fleet_fallback_rate(cap, live, svc.fleet.expected_hosts) : 0;
      f.cap[r].store(cap, std::memory_order_relaxed);  // the library bounds its fallback by it
      f.fallback[r].store(fb, std::memory_order_relaxed);
      if (r < out.count) rule_set_rate(out.rules[r], fb);
    }
    // New rules: a lease of the old ones no longer applies; the agent's next grant does.
    f.lease_expiry_ns.store(0, std::memory_order_release);
    f.state.store(static_cast<uint32_t>(FleetState::Waiting), std::memory_order_relaxed);
    f.enabled.store(1, std::memory_order_release);  // for `stat`: the agent goes by the trusted file
  });
  return out;
}

bool fleet_agent_ensure(std::string& msg) {
  msg.clear();
  int fd = fleet_lock_open(msg);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
  close(fd);  // releases the probe's lock: the agent takes it
  if (held) return true;  // only this user can hold it (fleet_lock_open): an agent of ours
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return msg = "cannot find bonsaictl's own path to start a fleet agent: start `bonsaictl fleet-agent`", false;
  self[n] = '\0';
  // Its output goes to its log in the user's directory (config/agent_log.h), where `stat`
  // and the operator find why it does not work.
  int log = agent_log_open("fleet-agent", msg);
  if (log < 0) return msg = fmt::format("cannot start a fleet agent: {}", msg), false;
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) {
    close(log);
    return msg = fmt::format("cannot start a fleet agent: {}", std::strerror(errno)), false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    msg = fmt::format("cannot start a fleet agent: {}", std::strerror(errno));
    close(ready[0]), close(ready[1]), close(log);
    return false;
  }
  if (pid == 0) {
    // A grandchild in its own session: it outlives `run`'s service and is nobody's zombie.
    setsid();
    if (fork() != 0) _exit(0);
    int w = ready[1] > 2 ? ready[1] : fcntl(ready[1], F_DUPFD, 3);  // not under the dup2s below
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0);
    dup2(log, 1), dup2(log, 2);
    unsetenv("LD_PRELOAD");
    fcntl(w, F_SETFD, 0);  // kept across exec: the agent says there whether it holds the lock
    char num[16];
    std::snprintf(num, sizeof num, "%d", w);
    setenv("BONSAI_FLEET_READY_FD", num, 1);
    execl(self, self, "fleet-agent", "--exit-when-idle", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ready[1]);
  close(log);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  // Its word: "ok", or why it cannot serve; nothing (it died, or hangs) is a failure too.
  std::string word;
  uint64_t deadline = mono_ns() + 5'000'000'000ull;
  for (;;) {
    uint64_t now = mono_ns();
    if (now >= deadline) break;
    pollfd p{ready[0], POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>((deadline - now) / 1'000'000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[512];
    ssize_t got = read(ready[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    word.append(buf, static_cast<size_t>(got));
    if (word.find('\n') != std::string::npos || word.size() > 4096) break;
  }
  close(ready[0]);
  if (size_t nl = word.find('\n'); nl != std::string::npos) word.resize(nl);
  std::string path = agent_log_path("fleet-agent");
  if (word == "ok")
    return msg = fmt::format("started a fleet agent for this namespace (bonsaictl fleet-agent --exit-when-idle); its "
                             "log: {}", path), true;
  msg = word.empty() ? fmt::format("the fleet agent it started did not come up within 5 s (its log: {})", path)
                     : fmt::format("the fleet agent it started cannot serve: {} (its log: {})", word, path);
  return false;
}

}  // namespace bonsai::ctl
