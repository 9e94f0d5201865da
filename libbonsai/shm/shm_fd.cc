// SPDX-License-Identifier: MIT
// The segment descriptor handed down the process tree (see shm_fd.h).
#include "shm/shm_fd.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sys/raw_stat.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {

constinit int detail::g_kept_fd = -1;  // the kept descriptor

namespace {

int& g_fd = detail::g_kept_fd;

// BONSAI_SHM_FD and BONSAI_SHM_UID as numbers (-1: unset or not a number), parsed at
// set-up: the environment's strings may be overwritten later (setproctitle), and a live
// change reads the owner again (shm_host_attach).
BONSAI_STARTUP_DATA constinit long g_fd_value = -1;
BONSAI_STARTUP_DATA constinit long g_uid_value = -1;

constinit dev_t g_dev = 0;
constinit ino_t g_ino = 0;
constinit unsigned g_owner = 0;
constinit char g_path[256] = {};

long raw_fcntl(int fd, int cmd, long arg) { return raw_syscall3(SYS_fcntl, fd, cmd, arg); }
void raw_close_fd(long fd) { raw_syscall3(SYS_close, fd, 0, 0); }

long raw_lstat(const char* path, struct stat& st) { return raw_fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW); }

bool private_segment(const struct stat& st, unsigned uid) {
  return S_ISREG(st.st_mode) && (st.st_uid == uid || st.st_uid == shm_uid_here(uid)) && !(st.st_mode & 077);
}

// Parses one unsigned decimal at p (spaces first). @return false if there is none.
bool take_uint(const char*& p, const char* end, unsigned long& v) {
  while (p < end && *p == ' ') ++p;
  if (p >= end || *p < '0' || *p > '9') return false;
  v = 0;
  while (p < end && *p >= '0' && *p <= '9' && v < (1ul << 33)) v = v * 10 + static_cast<unsigned long>(*p++ - '0');
  return true;
}

}  // namespace

BONSAI_STARTUP long shm_parse_uint(const char* s, long max) noexcept {
  if (!s || !*s) return -1;
  long v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return -1;
    v = v * 10 + (*s - '0');
    if (v > max) return -1;
  }
  return v;
}

BONSAI_STARTUP void shm_fd_configure(const char* fd_value, const char* uid_value) noexcept {
  g_fd_value = shm_parse_uint(fd_value, INT_MAX);
  g_uid_value = shm_parse_uint(uid_value, 0xfffffffeL);
}

unsigned shm_uid_here(unsigned uid) noexcept {
  long fd = raw_syscall3(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/uid_map"), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return uid;
  char buf[1024];  // the kernel allows 340 lines; a mapping past 1 KiB is not followed
  long n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf);
  raw_close_fd(fd);
  if (n <= 0) return uid;
  const char* p = buf;
  const char* end = buf + n;
  while (p < end) {  // "inside outside count" lines
    unsigned long in, out, count;
    if (!take_uint(p, end, in) || !take_uint(p, end, out) || !take_uint(p, end, count)) break;
    if (uid >= out && uid - out < count) return static_cast<unsigned>(in + (uid - out));
    while (p < end && *p != '\n') ++p;
    if (p < end) ++p;
  }
  return uid;
}

unsigned shm_owner_uid() noexcept {
  return g_uid_value >= 0 ? static_cast<unsigned>(g_uid_value) : static_cast<unsigned>(geteuid());
}

int shm_inherited_fd(const char* path, unsigned uid) noexcept {
  long fd = g_fd_value;
  if (fd < 0) return -1;
  long fl = raw_fcntl(static_cast<int>(fd), F_GETFL, 0);
  if (fl < 0 || (fl & O_ACCMODE) != O_RDWR) return -1;
  struct stat st, named;
  if (raw_fstat(static_cast<int>(fd), st) != 0 || !private_segment(st, uid)) return -1;
  if (raw_lstat(path, named) != 0 || named.st_dev != st.st_dev || named.st_ino != st.st_ino) return -1;
  return static_cast<int>(fd);
}

void shm_keep_fd(int fd, const struct stat& st, const char* path) noexcept {
  if (std::strlen(path) >= sizeof g_path) {
    raw_close_fd(fd);
    return;
  }
  rlimit rl{};
  unsigned long soft = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
  int kept = fd;
  if (int floor = shm_fd_floor(soft); fd < floor) {
    long high = raw_fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high >= 0) {
      raw_close_fd(fd);
      kept = static_cast<int>(high);
    }
  }
  if (kept == fd) raw_fcntl(kept, F_SETFD, FD_CLOEXEC);  // F_DUPFD_CLOEXEC set it on a copy
  std::strcpy(g_path, path);
  g_dev = st.st_dev;
  g_ino = st.st_ino;
  g_owner = st.st_uid;
  g_fd = kept;
}

int shm_kept_fd() noexcept { return g_fd; }

bool detail::kept_fd_is_segment() noexcept {
  struct stat st;
  return raw_fstat(g_fd, st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino;
}

int shm_fd_for_exec(bool& opened) noexcept {
  opened = false;
  if (!g_path[0]) return -1;
  struct stat st;
  if (g_fd >= 0 && raw_fstat(g_fd, st) == 0 && st.st_dev == g_dev && st.st_ino == g_ino) return g_fd;
  // Closed (a close loop, a raw close_range) or replaced: by name, as a child would.
  long f = raw_syscall3(SYS_openat, AT_FDCWD, reinterpret_cast<long>(g_path), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (f < 0) return -1;
  if (raw_fstat(static_cast<int>(f), st) != 0 || !private_segment(st, g_owner)) {
    raw_close_fd(f);
    return -1;
  }
  if (long high = raw_fcntl(static_cast<int>(f), F_DUPFD_CLOEXEC, g_fd >= 0 ? g_fd : 1000); high >= 0) {
    raw_close_fd(f);
    f = high;
  }
  opened = true;
  return static_cast<int>(f);
}

}  // namespace bonsai
