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

namespace {

struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// The last number of /proc/PID/status's "NSpid:" line (the pid in the process's own
// namespace), or -1.
long nspid_last(unsigned pid) noexcept {
  char path[48];
  if (!StrBuild(path, sizeof path).put("/proc/").put_uint(pid).put("/status").done()) return -1;
  char buf[2048];
  long n = read_small(path, buf, sizeof buf);
  if (n <= 0) return -1;
  for (long i = 0; i + 6 < n; ++i) {
    if ((i == 0 || buf[i - 1] == '\n') && buf[i] == 'N' && buf[i + 1] == 'S' && buf[i + 2] == 'p' &&
        buf[i + 3] == 'i' && buf[i + 4] == 'd' && buf[i + 5] == ':') {
      long last = -1;
      for (long j = i + 6; j < n && buf[j] != '\n';) {
        if (buf[j] < '0' || buf[j] > '9') {
          ++j;
          continue;
        }
        long v = 0;
        while (j < n && buf[j] >= '0' && buf[j] <= '9' && v < (1L << 31)) v = v * 10 + (buf[j++] - '0');
        last = v;
      }
      return last;
    }
  }
  return -1;
}

}  // namespace

int proc_host_pid(uint32_t ns, int ns_pid, uint64_t start_time, bool& ns_seen) noexcept {
  ns_seen = false;
  if (ns == 0 || ns_pid <= 0) return 0;
  long dir = raw_open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return 0;
  alignas(8) char buf[4096];
  int found = 0;
  for (int rounds = 0; rounds < 100000 && !found; ++rounds) {  // bounded: /proc holds < 4M pids
    long n = raw_syscall3(SYS_getdents64, dir, reinterpret_cast<long>(buf), sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n && !found;) {
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      if (d->reclen == 0) break;
      off += d->reclen;
      unsigned pid = 0;
      const char* c = d->name;
      for (; *c >= '0' && *c <= '9' && pid < (1u << 30); ++c) pid = pid * 10 + static_cast<unsigned>(*c - '0');
      if (*c || pid == 0) continue;
      char path[48];
      if (!StrBuild(path, sizeof path).put("/proc/").put_uint(pid).put("/ns/pid").done()) continue;
      struct stat st;
      if (raw_fstatat(AT_FDCWD, path, st, 0) != 0 || static_cast<uint32_t>(st.st_ino) != ns) continue;
      ns_seen = true;
      if (nspid_last(pid) != ns_pid) continue;
      uint64_t start;
      if (proc_status(static_cast<int>(pid), start) == ProcStatus::Alive && start == start_time)
        found = static_cast<int>(pid);
    }
  }
  raw_close(static_cast<int>(dir));
  return found;
}

SlotProc proc_of_slot(uint32_t self, uint32_t slot_ns, int slot_pid, uint64_t start_time, int& pid) noexcept {
  pid = 0;
  if (slot_ns == 0 || slot_ns == self) {
    if (!proc_is(slot_pid, start_time)) return SlotProc::Dead;
    pid = slot_pid;
    return SlotProc::Alive;
  }
  bool seen = false;
  pid = proc_host_pid(slot_ns, slot_pid, start_time, seen);
  if (pid) return SlotProc::Alive;
  // Every process of every namespace is visible from the initial one: unseen there, the
  // namespace is gone with its processes. From anywhere else it may be an ancestor's.
  return seen || self == kInitPidNs ? SlotProc::Dead : SlotProc::Unknown;
}

}  // namespace bonsai
