// SPDX-License-Identifier: MIT
// The processes bonsaictl can see, from at most one pass over /proc: each by our pid,
// by (its pid namespace, its pid there), and by its pid at every level of its NSpid
// line. A segment's readers (stat, top, serve, ls, rm, set --wait) judge every slot of
// a look against one table: a slot names its process by (pid namespace, pid, start
// time), all of it written by whoever maps the segment, so a tenant's 1,024 slots cost
// one pass, and a slot is taken for dead only when no reading of it finds a live
// process. The pass is made when first needed: a look at slots of our namespace whose
// processes are alive reads /proc/PID/stat once per distinct pid (up to kDirectReads).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <unordered_set>

#include "shm/shm_slots.h"

namespace bonsai::ctl {

class ProcTable {
 public:
  // Reads nothing yet: /proc/PID/stat for the first kDirectReads distinct pids of our
  // namespace asked about, the whole of /proc (once) for anything else.
  ProcTable();
  static constexpr size_t kDirectReads = 64;

  // The verdict on a slot of pid namespace `ns` (0: taken as ours), pid `pid` there,
  // start time `start` (kAnyStart: a claim in progress). Alive: that namespace's `pid`
  // is alive and started then; `here` is our pid for it. Dead, only with proof: no
  // process we can see is `pid` in any namespace with that start time, and we can see
  // every process the slot could mean (our namespace, a namespace we see processes of,
  // or anything from the initial one), and the slot is older than this table. Else
  // Unknown: another reading of the slot (its namespace rewritten) finds a live
  // process, or its namespace is not visible from here: never reclaimed, never named
  // as one of our pids.
  SlotProc judge(uint32_t ns, int pid, uint64_t start, int& here) const;

  // judge() for shm_slots.h slots_reclaim; valid while this table lives.
  SlotJudge slot_judge() const { return SlotJudge{judge_fn, const_cast<ProcTable*>(this)}; }

  uint32_t self_ns() const { return self_; }

 private:
  struct Proc {
    int here;        // our pid
    uint64_t start;  // /proc/PID/stat start time
  };
  static SlotProc judge_fn(void* ctx, uint32_t ns, int pid, uint64_t start, int& here) noexcept;
  void scan() const;  // the pass over /proc, once
  void add(int pid, uint64_t start) const;
  bool ours_start(int pid, uint64_t& start) const;  // our pid's start time (0: gone)
  bool alive_anywhere(int pid, uint64_t start) const;

  uint32_t self_ = 0;
  bool whole_ = false;  // we are in the initial pid namespace: every process is visible
  mutable bool scanned_ = false;
  mutable uint64_t read_tick_ = 0;  // clock ticks after boot when the pass began
  mutable std::unordered_map<int, uint64_t> direct_;      // our pid -> start time (0: gone), read alone
  mutable std::unordered_map<int, uint64_t> ours_;        // our pid -> start time
  mutable std::unordered_map<uint64_t, Proc> inner_;      // (pid namespace << 32 | pid there) -> process
  mutable std::unordered_multimap<int, uint64_t> any_;    // its pid at any NSpid level -> start time
  mutable std::unordered_set<uint32_t> seen_ns_;          // namespaces with a process visible here
};

}  // namespace bonsai::ctl
