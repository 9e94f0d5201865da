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
#include "config/fleet_store.h"
#include "sys/clock.h"

namespace bonsai::ctl {

std::string fleet_lock_dir() { return fmt::format("/dev/shm/{}bonsai-fleet.{}.d", shm_prefix(), ctl_uid()); }
std::string fleet_lock_path() { return fleet_lock_dir() + "/lock"; }

int fleet_lock_open(std::string& why) {
  std::string dir = fleet_lock_dir();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return why = fmt::format("cannot create {}: {}", dir, std::strerror(errno)), -1;
  // O_NOFOLLOW and fstat on what was opened: no window between the check and the use.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return why = fmt::format("{} is not a directory ({}): someone put it there in the fleet agent's way; remove it "
                             "(as root) and try again",
                             dir, std::strerror(errno)),
           -1;
  uid_t me = geteuid();
  struct stat st {};
  if (fstat(dfd, &st) != 0 || st.st_uid != me || (st.st_mode & 0077)) {
    why = fmt::format("{} belongs to uid {} with mode {:04o}, not to uid {} with mode 0700: another user may have made "
                      "it to squat the fleet agent's lock; remove it (as root) and try again",
                      dir, st.st_uid, st.st_mode & 07777, me);
    close(dfd);
    return -1;
  }
  int fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  int err = errno;
  close(dfd);
  if (fd < 0) return why = fmt::format("cannot open {}: {}", fleet_lock_path(), std::strerror(err)), -1;
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
    f.expected_hosts.store(svc.fleet.expected_hosts, std::memory_order_relaxed);
    for (uint32_t r = 0; r < kMaxRules; ++r) {
      uint64_t cap = r < svc.limits.count ? svc.limits.rules[r].rate : 0;
      uint64_t fb = cap ? fleet_fallback_rate(cap, live, svc.fleet.expected_hosts) : 0;
      f.cap[r].store(cap, std::memory_order_relaxed);
      f.fallback[r].store(fb, std::memory_order_relaxed);
      if (r < out.count) out.rules[r].rate = fb;
    }
    auto copy = [](char* dst, size_t cap, const std::string& s) {
      for (size_t i = 0; i < cap; ++i) dst[i] = i < s.size() && i + 1 < cap ? s[i] : '\0';
    };
    copy(f.store, kFleetStoreMax, svc.fleet.store);
    std::string too_long;  // checked by `check` (yaml_fleet.cc): both fit
    copy(f.password_file, kFleetPathMax,
         fleet_password_files_pack(svc.fleet.password_file, svc.fleet.sentinel_password_file, kFleetPathMax, too_long));
    copy(f.fleet_namespace, kFleetNamespaceMax, svc.fleet.fleet_namespace);
    f.period_ms.store(svc.fleet.period_ms, std::memory_order_relaxed);
    // New rules: a lease of the old ones no longer applies; the agent's next grant does.
    f.lease_expiry_ns.store(0, std::memory_order_release);
    f.state.store(static_cast<uint32_t>(FleetState::Waiting), std::memory_order_relaxed);
    f.enabled.store(1, std::memory_order_release);
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
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return msg = fmt::format("cannot start a fleet agent: {}", std::strerror(errno)), false;
  pid_t pid = fork();
  if (pid < 0) {
    msg = fmt::format("cannot start a fleet agent: {}", std::strerror(errno));
    close(ready[0]), close(ready[1]);
    return false;
  }
  if (pid == 0) {
    // A grandchild in its own session: it outlives `run`'s service and is nobody's zombie.
    setsid();
    if (fork() != 0) _exit(0);
    int w = ready[1] > 2 ? ready[1] : fcntl(ready[1], F_DUPFD, 3);  // not under the dup2s below
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) dup2(null, 0), dup2(null, 1), dup2(null, 2);
    unsetenv("LD_PRELOAD");
    fcntl(w, F_SETFD, 0);  // kept across exec: the agent says there whether it holds the lock
    char num[16];
    std::snprintf(num, sizeof num, "%d", w);
    setenv("BONSAI_FLEET_READY_FD", num, 1);
    execl(self, self, "fleet-agent", "--exit-when-idle", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(ready[1]);
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
  if (word == "ok") return msg = "started a fleet agent for this namespace (bonsaictl fleet-agent --exit-when-idle)", true;
  msg = word.empty() ? "the fleet agent it started did not come up within 5 s (run `bonsaictl fleet-agent` to see why)"
                     : "the fleet agent it started cannot serve: " + word;
  return false;
}

}  // namespace bonsai::ctl
