// SPDX-License-Identifier: MIT
// The join rendezvous's server side (see sv_rendezvous.h).
#include "supervisor/sv_rendezvous.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "abi/sv_join.h"
#include "shm/shm_fd.h"
#include "shm/shm_name.h"

namespace bonsai::ctl {
namespace {

// Does something listen on the socket `a` names (a live supervisor)? A stale socket
// refuses the connection; a full backlog is someone listening.
bool listening(const sockaddr_un& a, socklen_t len) {
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  bool live = connect(s, reinterpret_cast<const sockaddr*>(&a), len) == 0 || errno == EAGAIN || errno == EINPROGRESS;
  close(s);
  return live;
}

}  // namespace

SvRendezvous sv_rendezvous_open(const std::string& service, const std::string& prefix, unsigned owner,
                                std::string& why) {
  SvRendezvous r;
  why.clear();
  unsigned me = geteuid();
  // Only the owner's supervisors serve: its joiners take no other uid's (root's neither).
  if (owner != me && shm_uid_here(owner) != me) return r;
  if (!shm_service_name_valid(service) || !shm_prefix_valid(prefix)) return r;
  char dir[160];
  if (!sv_join_dir(dir, sizeof dir, prefix.c_str(), owner)) return r;
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    why = fmt::format("cannot create {}: {}", dir, std::strerror(errno));
    return r;
  }
  // O_NOFOLLOW and fstat on what was opened: no window between the check and the use.
  int d = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (d < 0) {
    why = fmt::format("{} is not a directory ({}): someone put it in the service's way; remove it", dir,
                      std::strerror(errno));
    return r;
  }
  struct stat st{};
  if (fstat(d, &st) != 0 || !sv_join_dir_ok(st, me)) {
    why = fmt::format("{} belongs to uid {} with mode {:04o}, not to uid {} with mode 0700: another user may have "
                      "made it first to take the service's programs; remove it (as root)",
                      dir, st.st_uid, st.st_mode & 07777, me);
    close(d);
    return r;
  }
  // One supervisor at a time replaces a stale socket and binds; another one binding
  // right now will serve.
  if (flock(d, LOCK_EX | LOCK_NB) != 0) {
    close(d);
    return r;
  }
  auto give_up = [&]() {
    close(d);  // and its lock
    return r;
  };
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  size_t n = sv_join_via(a.sun_path, sizeof a.sun_path, d, service.c_str());
  if (!n) return give_up();
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + 1);
  struct stat old{};
  if (fstatat(d, service.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISSOCK(old.st_mode)) {
      why = fmt::format("{}/{} is not a socket: remove it", dir, service);
      return give_up();
    }
    if (old.st_uid == me && listening(a, len)) return give_up();  // the service's supervisor: its programs join it
    if (unlinkat(d, service.c_str(), 0) != 0 && errno != ENOENT) {
      why = fmt::format("cannot replace the stale socket {}/{}: {}", dir, service, std::strerror(errno));
      return give_up();
    }
  }
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return give_up();
  struct stat mine{};
  if (bind(s, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(s, 64) != 0 ||
      fstatat(d, service.c_str(), &mine, AT_SYMLINK_NOFOLLOW) != 0) {
    close(s);
    return give_up();
  }
  flock(d, LOCK_UN);
  r.fd = s;
  r.dir_fd = d;
  r.name = service;
  r.dev = mine.st_dev;
  r.ino = mine.st_ino;
  return r;
}

void sv_rendezvous_close(SvRendezvous& r) {
  if (r.dir_fd >= 0) {
    // Removed only while it is still ours: a supervisor that replaced it as stale keeps its own.
    struct stat st{};
    if (flock(r.dir_fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(r.dir_fd, r.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == r.dev && st.st_ino == r.ino)
      unlinkat(r.dir_fd, r.name.c_str(), 0);
    close(r.dir_fd);
    r.dir_fd = -1;
  }
  if (r.fd >= 0) close(r.fd);
  r.fd = -1;
}

bool sv_rendezvous_peer_ok(int sock, bool same_ns) {
  ucred cr{};
  socklen_t cl = sizeof cr;
  // Its pid as this supervisor sees it: 0 when it cannot (another pid namespace, not
  // below this one).
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cr.uid != geteuid() || cr.pid <= 0) return false;
  if (!same_ns) return true;
  // A process's own pid namespace never changes: looked up once.
  static struct stat self {};
  static bool have_self = stat("/proc/self/ns/pid", &self) == 0;
  char path[48];
  std::snprintf(path, sizeof path, "/proc/%d/ns/pid", static_cast<int>(cr.pid));
  struct stat peer{};
  return have_self && stat(path, &peer) == 0 && self.st_dev == peer.st_dev && self.st_ino == peer.st_ino;
}

}  // namespace bonsai::ctl
