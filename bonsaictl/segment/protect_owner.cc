// SPDX-License-Identifier: MIT
// See protect_owner.h.
#include "segment/protect_owner.h"
#include "segment/target_user.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bonsai::ctl {
namespace {

// Reads /proc/PID/<what> into buf (NUL-terminated, at most size - 1 bytes); length or -1.
ssize_t proc_read(pid_t pid, const char* what, char* buf, size_t size) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/%s", static_cast<int>(pid), what);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < size) {
    ssize_t n = read(fd, buf + got, size - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  buf[got] = '\0';
  return static_cast<ssize_t>(got);
}

}  // namespace

uint64_t proc_start_ticks(pid_t pid) noexcept {
  char buf[1024];
  if (proc_read(pid, "stat", buf, sizeof buf) <= 0) return 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields
  // after its last ')' are 3.., the start time is field 22.
  char* p = std::strrchr(buf, ')');
  if (!p) return 0;
  ++p;
  for (int field = 3; field <= 22; ++field) {
    while (*p == ' ') ++p;
    if (!*p) return 0;
    if (field == 22) {
      char* end = nullptr;
      errno = 0;
      unsigned long long v = std::strtoull(p, &end, 10);
      return end != p && errno == 0 ? v : 0;
    }
    while (*p && *p != ' ') ++p;
  }
  return 0;
}

bool protect_agent_alive(uint32_t pid, uint64_t start) noexcept {
  if (pid == 0 || pid > 0x3fffffff) return false;  // untrusted: no pid, or no valid one
  auto p = static_cast<pid_t>(pid);
  if (kill(p, 0) != 0 && errno != EPERM) return false;
  // The pair is the segment's, which its tenants can write: a live process claimed there
  // keeps another agent away only when it is a protect-agent of this very user, started
  // when the pair says. Without /proc (or hidden) the live pid is all there is to know.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d", static_cast<int>(p));
  struct stat st {};
  if (stat(path, &st) != 0) return true;
  if (st.st_uid != ctl_uid()) return false;  // the segments' user's (`stat --user` looks at another's)
  if (start != 0 && proc_start_ticks(p) != start) return false;
  char cmd[4096];
  ssize_t n = proc_read(p, "cmdline", cmd, sizeof cmd);
  if (n < 0) return false;
  for (ssize_t i = 0; i < n; ++i)
    if (cmd[i] == '\0') cmd[i] = ' ';
  return std::strstr(cmd, " protect-agent ") != nullptr || (n > 14 && std::strcmp(cmd + n - 14, " protect-agent") == 0);
}

}  // namespace bonsai::ctl
