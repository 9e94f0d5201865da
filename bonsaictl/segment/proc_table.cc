// SPDX-License-Identifier: MIT
// One pass over /proc for a segment's readers (see proc_table.h).
#include "segment/proc_table.h"

#include <ctime>
#include <dirent.h>
#include <unistd.h>

#include "shm/shm_proc.h"

namespace bonsai::ctl {
namespace {

constexpr unsigned kNsLevels = 32;  // the kernel nests pid namespaces 32 deep at most

uint64_t key(uint32_t ns, int pid) { return uint64_t{ns} << 32 | static_cast<uint32_t>(pid); }

// Clock ticks after boot, the unit of /proc/PID/stat's start time.
uint64_t boot_ticks() {
  timespec ts;
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return 0;
  long hz = sysconf(_SC_CLK_TCK);
  if (hz <= 0) hz = 100;
  return static_cast<uint64_t>(ts.tv_sec) * static_cast<uint64_t>(hz) +
         static_cast<uint64_t>(ts.tv_nsec) / (1'000'000'000u / static_cast<uint64_t>(hz));
}

}  // namespace

ProcTable::ProcTable() {
  self_ = proc_self_pidns();
  whole_ = self_ == kInitPidNs;
}

void ProcTable::scan() const {
  if (scanned_) return;
  scanned_ = true;
  read_tick_ = boot_ticks();
  DIR* d = opendir("/proc");
  if (!d) return;  // nothing seen: nothing proved dead
  while (dirent* e = readdir(d)) {
    long pid = 0;
    const char* c = e->d_name;
    for (; *c >= '0' && *c <= '9' && pid < (1L << 30); ++c) pid = pid * 10 + (*c - '0');
    if (*c || pid <= 0) continue;
    uint64_t start = 0;
    if (proc_status(static_cast<int>(pid), start) != ProcStatus::Alive) continue;
    add(static_cast<int>(pid), start);
  }
  closedir(d);
}

void ProcTable::add(int pid, uint64_t start) const {
  ours_[pid] = start;
  uint32_t ns = proc_pidns(pid);  // 0: another user's (its link is not ours to read)
  int levels[kNsLevels];
  unsigned n = 0;
  if (ns != 0 && ns == self_) {
    levels[n++] = pid;  // of our namespace: NSpid is our pid alone
  } else {
    n = proc_nspid(pid, levels, kNsLevels);
    if (n > kNsLevels) n = kNsLevels;
    if (n == 0) levels[n++] = pid;
  }
  for (unsigned k = 0; k < n; ++k) any_.emplace(levels[k], start);
  if (ns != 0) {
    inner_[key(ns, levels[n - 1])] = Proc{pid, start};
    seen_ns_.insert(ns);
  }
}

bool ProcTable::ours_start(int pid, uint64_t& start) const {
  start = 0;
  if (!scanned_) {
    if (auto it = direct_.find(pid); it != direct_.end()) return start = it->second, true;
    if (direct_.size() < kDirectReads) {
      if (proc_status(pid, start) != ProcStatus::Alive) start = 0;
      direct_.emplace(pid, start);
      return true;
    }
    scan();
  }
  if (auto it = ours_.find(pid); it != ours_.end()) start = it->second;
  return true;
}

bool ProcTable::alive_anywhere(int pid, uint64_t start) const {
  scan();
  auto [b, e] = any_.equal_range(pid);
  for (auto it = b; it != e; ++it)
    if (start == kAnyStart || it->second == start) return true;
  return false;
}

SlotProc ProcTable::judge(uint32_t ns, int pid, uint64_t start, int& here) const {
  here = 0;
  if (pid <= 0) return SlotProc::Unknown;
  bool ours = ns == 0 || ns == self_;
  if (start == kAnyStart) {
    // A claim in progress may be newer than this table: only our own /proc, read now, tells.
    if (!ours) return SlotProc::Unknown;
    uint64_t now = 0;
    if (proc_status(pid, now) == ProcStatus::Alive) {
      here = pid;
      return SlotProc::Alive;
    }
    return alive_anywhere(pid, kAnyStart) ? SlotProc::Unknown : SlotProc::Dead;
  }
  uint64_t now = 0;
  if (ours && ours_start(pid, now) && now == start) {
    here = pid;
    return SlotProc::Alive;
  }
  scan();
  if (ours) {  // past kDirectReads pids the pass answers
    if (auto it = ours_.find(pid); it != ours_.end() && it->second == start) {
      here = pid;
      return SlotProc::Alive;
    }
  } else if (auto it = inner_.find(key(ns, pid)); it != inner_.end() && it->second.start == start) {
    here = it->second.here;
    return SlotProc::Alive;
  }
  // Not alive as the slot reads. Its namespace is the tenant's to write: any process
  // that is `pid` somewhere and started then may be it.
  if (alive_anywhere(pid, start)) return SlotProc::Unknown;
  if (start >= read_tick_) return SlotProc::Unknown;  // started after the pass began: not in it
  return whole_ || ours || seen_ns_.count(ns) ? SlotProc::Dead : SlotProc::Unknown;
}

SlotProc ProcTable::judge_fn(void* ctx, uint32_t ns, int pid, uint64_t start, int& here) noexcept {
  return static_cast<const ProcTable*>(ctx)->judge(ns, pid, start, here);
}

}  // namespace bonsai::ctl
