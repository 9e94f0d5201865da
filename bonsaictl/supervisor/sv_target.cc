// SPDX-License-Identifier: MIT
// Reading a supervised thread from outside (see sv_target.h): /proc, process_vm_readv,
// pidfd_getfd.
#include "supervisor/sv_target.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace bonsai::ctl {
namespace {

int g_spare = -1;  // a descriptor given up when the table is full (sv_fds_setup)
bool g_blind_mem = false, g_blind_fd = false, g_blind_io = false;

void spare_take() {
  if (g_spare < 0) g_spare = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

}  // namespace

uint64_t sv_fds_setup(uint64_t test_nofile) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0) {
    if (r.rlim_cur < r.rlim_max) {
      rlimit up{r.rlim_max, r.rlim_max};
      if (::setrlimit(RLIMIT_NOFILE, &up) == 0) r = up;
    }
    if (test_nofile && test_nofile < r.rlim_cur) {
      rlimit down{test_nofile, r.rlim_max};
      if (::setrlimit(RLIMIT_NOFILE, &down) == 0) r = down;
    }
  }
  spare_take();
  return r.rlim_cur;
}

void sv_target_test_blind(const char* spec) {
  if (!spec) return;
  g_blind_mem = std::strstr(spec, "mem") != nullptr;
  g_blind_fd = std::strstr(spec, "fd") != nullptr;
  g_blind_io = std::strstr(spec, "io") != nullptr;
}

SvSpareFd::SvSpareFd() noexcept {
  if (g_spare >= 0) ::close(g_spare);
  g_spare = -1;
}

SvSpareFd::~SvSpareFd() { spare_take(); }

int sv_tgid_of(int tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", tid);
  SvSpareFd room;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[2048];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* t = std::strstr(buf, "\nTgid:");
  if (!t) return -1;
  long v = std::strtol(t + 6, nullptr, 10);
  return v > 0 && v < (1L << 30) ? static_cast<int>(v) : -1;
}

bool sv_thread_alive(int tgid, int tid) {
  return ::syscall(SYS_tgkill, tgid, tid, 0) == 0 || errno == EPERM;
}

int sv_io_open(int tgid, int tid) {
  char path[80];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/io", tgid, tid);
  if (g_blind_io) return errno = EACCES, -1;
  return ::open(path, O_RDONLY | O_CLOEXEC);
}

bool sv_io_read(int fd, SvIo& io) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* r = std::strstr(buf, "rchar:");
  const char* w = std::strstr(buf, "wchar:");
  if (!r || !w) return false;
  io.rchar = std::strtoull(r + 6, nullptr, 10);
  io.wchar = std::strtoull(w + 6, nullptr, 10);
  return true;
}

FdKind sv_fd_kind(int tgid, int fd) {
  if (fd < 0) return FdKind::None;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd/%d", tgid, fd);
  struct stat st;
  if (::stat(path, &st) != 0) return FdKind::File;
  if (S_ISSOCK(st.st_mode)) return FdKind::Socket;
  if (S_ISFIFO(st.st_mode)) return FdKind::Pipe;
  return FdKind::File;
}

bool sv_mem_read(int tid, uint64_t addr, void* out, size_t len) {
  if (!len) return true;
  if (g_blind_mem) return false;
  iovec local{out, len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return ::process_vm_readv(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool sv_mem_write(int tid, uint64_t addr, const void* in, size_t len) {
  if (!len) return true;
  iovec local{const_cast<void*>(in), len};
  iovec remote{reinterpret_cast<void*>(addr), len};
  return ::process_vm_writev(tid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

bool sv_mem_writev(int tid, const void* in, size_t len, const iovec* remote, size_t n) {
  if (!len) return true;
  if (g_blind_mem) return false;
  iovec local{const_cast<void*>(in), len};
  return ::process_vm_writev(tid, &local, 1, remote, n, 0) == static_cast<ssize_t>(len);
}

bool sv_iov_total(int tid, uint64_t addr, uint64_t count, uint64_t& total) {
  total = 0;
  if (count > 1024) return false;  // UIO_MAXIOV: the kernel refuses it
  iovec v[64];
  for (uint64_t done = 0; done < count;) {
    uint64_t k = count - done < 64 ? count - done : 64;
    if (!sv_mem_read(tid, addr + done * sizeof(iovec), v, k * sizeof(iovec))) return false;
    for (uint64_t i = 0; i < k; ++i)
      if (__builtin_add_overflow(total, v[i].iov_len, &total)) return false;
    done += k;
  }
  return true;
}

int sv_fd_copy(int pidfd, int fd) {
  if (pidfd < 0 || fd < 0 || g_blind_fd) return -1;
  return static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

long sv_bytes_queued(int fd_copy) {
  int n = 0;
  if (fd_copy < 0 || ::ioctl(fd_copy, FIONREAD, &n) != 0 || n < 0) return -1;
  return n;
}

}  // namespace bonsai::ctl
