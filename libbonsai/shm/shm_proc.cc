// SPDX-License-Identifier: MIT
// /proc readers for slot identity (see shm_proc.h). Raw system calls, no allocation.
#include "shm/shm_proc.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "sys/raw_open.h"
#include "sys/raw_stat.h"
#include "sys/raw_syscall.h"
#include "sys/str_build.h"

namespace bonsai {
namespace {

// Reads up to cap-1 bytes of a small /proc file. @return bytes read, or -1.
long read_small(const char* path, char* buf, size_t cap) noexcept {
  long fd = raw_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  long n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(cap - 1));
  raw_close(static_cast<int>(fd));
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

}  // namespace

namespace {

ProcStatus status_at(const char* path, uint64_t& start_time) noexcept {
  start_time = 0;
  char buf[1024];
  long n = read_small(path, buf, sizeof buf);
  if (n <= 0) return ProcStatus::Dead;
  // "pid (comm) S ppid ...": comm may hold spaces and ')', so find the last ')'.
  const char* p = nullptr;
  for (long i = n - 1; i >= 0; --i)
    if (buf[i] == ')') {
      p = buf + i + 1;
      break;
    }
  if (!p) return ProcStatus::Dead;
  // Field 3 (state) is the first after ')'; start time is field 22.
  int field = 2;
  const char* state = nullptr;
  while (*p) {
    while (*p == ' ') ++p;
    if (!*p) break;
    ++field;
    if (field == 3) state = p;
    if (field == 22) {
      uint64_t v = 0;
      while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
      start_time = v;
      break;
    }
    while (*p && *p != ' ') ++p;
  }
  if (!state || *state == 'Z' || *state == 'X' || start_time == 0) return ProcStatus::Dead;
  return ProcStatus::Alive;
}

}  // namespace

ProcStatus proc_status(int pid, uint64_t& start_time) noexcept {
  start_time = 0;
  if (pid <= 0) return ProcStatus::Dead;
  char path[48];
  if (!StrBuild(path, sizeof path).put("/proc/").put_uint(static_cast<unsigned>(pid)).put("/stat").done())
    return ProcStatus::Dead;
  return status_at(path, start_time);
}

ProcStatus proc_status_self(uint64_t& start_time) noexcept { return status_at("/proc/self/stat", start_time); }

void proc_comm(int pid, char* out, size_t cap) noexcept {
  if (cap == 0) return;
  out[0] = '\0';
  char path[48];
  if (!StrBuild(path, sizeof path).put("/proc/").put_uint(static_cast<unsigned>(pid)).put("/comm").done()) return;
  char buf[64];
  long n = read_small(path, buf, sizeof buf);
  if (n <= 0) return;
  size_t i = 0;
  for (; i + 1 < cap && i < static_cast<size_t>(n) && buf[i] != '\n'; ++i) out[i] = buf[i];
  out[i] = '\0';
}

bool proc_is(int pid, uint64_t start_time) noexcept {
  uint64_t now_start;
  return proc_status(pid, now_start) == ProcStatus::Alive && now_start == start_time;
}

uint32_t proc_self_pidns() noexcept {
  struct stat st;
  if (raw_fstatat(AT_FDCWD, "/proc/self/ns/pid", st, 0) != 0) return 0;
  return static_cast<uint32_t>(st.st_ino);  // nsfs inode numbers are 32-bit
}

uint32_t proc_pidns(int pid) noexcept {
  if (pid <= 0) return 0;
  char path[48];
  if (!StrBuild(path, sizeof path).put("/proc/").put_uint(static_cast<unsigned>(pid)).put("/ns/pid").done()) return 0;
  struct stat st;
  if (raw_fstatat(AT_FDCWD, path, st, 0) != 0) return 0;
  return static_cast<uint32_t>(st.st_ino);
}

unsigned proc_nspid(int pid, int* out, unsigned cap) noexcept {
  if (pid <= 0) return 0;
  char path[48];
  if (!StrBuild(path, sizeof path).put("/proc/").put_uint(static_cast<unsigned>(pid)).put("/status").done())
    return 0;
  char buf[2048];
  long n = read_small(path, buf, sizeof buf);
  for (long i = 0; i + 6 < n; ++i) {
    if ((i != 0 && buf[i - 1] != '\n') || buf[i] != 'N' || buf[i + 1] != 'S' || buf[i + 2] != 'p' ||
        buf[i + 3] != 'i' || buf[i + 4] != 'd' || buf[i + 5] != ':')
      continue;
    unsigned count = 0;
    for (long j = i + 6; j < n && buf[j] != '\n';) {
      if (buf[j] < '0' || buf[j] > '9') {
        ++j;
        continue;
      }
      long v = 0;
      while (j < n && buf[j] >= '0' && buf[j] <= '9') {
        if (v < (1L << 31)) v = v * 10 + (buf[j] - '0');
        ++j;
      }
      if (v <= 0 || v >= (1L << 31)) return 0;  // not a pid: the line is not what we think
      if (count < cap) out[count] = static_cast<int>(v);
      ++count;
    }
    return count;
  }
  return 0;
}

}  // namespace bonsai
