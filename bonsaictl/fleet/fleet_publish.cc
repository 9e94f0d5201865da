// SPDX-License-Identifier: MIT
// The fleet block at `run`/`load` time, and starting an agent (see fleet_publish.h).
#include "fleet/fleet_publish.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bucket/fleet_lease.h"

namespace bonsai::ctl {

std::string fleet_lock_path() { return fmt::format("/dev/shm/{}bonsai-fleet.{}.lock", shm_prefix(), ctl_uid()); }

LimitSet fleet_publish(Segment& seg, const ServiceConfig& svc) {
  ShmFleet& f = seg.seg().fleet;
  LimitSet out = svc.limits;
  seg.guarded([&] {
    if (!svc.fleet.present) {
      f.enabled.store(0, std::memory_order_relaxed);
      f.lease_expiry_ns.store(0, std::memory_order_release);  // no lease: the limits apply as written
      for (uint32_t r = 0; r < kMaxRules; ++r) f.cap[r].store(0, std::memory_order_relaxed);
      return;
    }
    uint32_t live = f.live_hosts.load(std::memory_order_relaxed);
    for (uint32_t r = 0; r < kMaxRules; ++r) {
      uint64_t cap = r < svc.limits.count ? svc.limits.rules[r].rate : 0;
      f.cap[r].store(cap, std::memory_order_relaxed);
      f.fallback[r].store(cap ? fleet_fallback_rate(cap, live) : 0, std::memory_order_relaxed);
      if (r < out.count) out.rules[r].rate = fleet_fallback_rate(cap, live);
    }
    auto copy = [](char* dst, size_t cap, const std::string& s) {
      for (size_t i = 0; i < cap; ++i) dst[i] = i < s.size() && i + 1 < cap ? s[i] : '\0';
    };
    copy(f.store, kFleetStoreMax, svc.fleet.store);
    copy(f.password_file, kFleetPathMax, svc.fleet.password_file);
    f.period_ms.store(svc.fleet.period_ms, std::memory_order_relaxed);
    // New rules: a lease of the old ones no longer applies; the agent's next grant does.
    f.lease_expiry_ns.store(0, std::memory_order_release);
    f.state.store(static_cast<uint32_t>(FleetState::Waiting), std::memory_order_relaxed);
    f.enabled.store(1, std::memory_order_release);
  });
  return out;
}

std::string fleet_agent_ensure() {
  std::string lock = fleet_lock_path();
  int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fmt::format("cannot open {} ({}): start `bonsaictl fleet-agent` yourself", lock, std::strerror(errno));
  bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
  close(fd);  // releases the probe's lock: the agent takes it
  if (held) return "";
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "cannot find bonsaictl's own path: start `bonsaictl fleet-agent` yourself";
  self[n] = '\0';
  pid_t pid = fork();
  if (pid < 0) return fmt::format("cannot start a fleet agent: {}", std::strerror(errno));
  if (pid == 0) {
    // A grandchild in its own session: it outlives `run`'s service and is nobody's zombie.
    setsid();
    if (fork() != 0) _exit(0);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0), dup2(null, 1), dup2(null, 2);
    unsetenv("LD_PRELOAD");
    execl(self, self, "fleet-agent", "--exit-when-idle", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return "started a fleet agent for this namespace (bonsaictl fleet-agent --exit-when-idle)";
}

}  // namespace bonsai::ctl
