// SPDX-License-Identifier: MIT
// Slot claim, release and reclaim (see shm_slots.h).
#include "shm/shm_slots.h"

#include "shm/shm_proc.h"

// Set from the file VERSION by the Makefile; 0 ("unknown") in a build without it.
#ifndef BONSAI_VERSION_CODE
#define BONSAI_VERSION_CODE 0
#endif

namespace bonsai {
namespace {

constexpr uint32_t st(SlotState s) { return static_cast<uint32_t>(s); }

void fold_counters(ShmSegment& seg, const ProcessCounters& pc) {
  for (size_t c = 0; c < kCallCount; ++c) {
    CallTotals t = counters_total(pc, static_cast<CallId>(c));
    if (t.calls) seg.exited.calls[c].fetch_add(t.calls, std::memory_order_relaxed);
    if (t.bytes) seg.exited.bytes[c].fetch_add(t.bytes, std::memory_order_relaxed);
    if (t.throttled) seg.exited.throttled[c].fetch_add(t.throttled, std::memory_order_relaxed);
    if (t.wait_ns) seg.exited.wait_ns[c].fetch_add(t.wait_ns, std::memory_order_relaxed);
    if (t.wire_bytes) seg.exited.wire_bytes[c].fetch_add(t.wire_bytes, std::memory_order_relaxed);
    if (t.refused) seg.exited.refused[c].fetch_add(t.refused, std::memory_order_relaxed);
    if (t.shortened) seg.exited.shortened[c].fetch_add(t.shortened, std::memory_order_relaxed);
    if (t.held_ns) seg.exited.held_ns[c].fetch_add(t.held_ns, std::memory_order_relaxed);
  }
}

void slot_free(ShmSlot& slot) {
  slot.pid.store(0, std::memory_order_relaxed);
  slot.start_time.store(0, std::memory_order_relaxed);
  slot.waiting.store(0, std::memory_order_relaxed);
  slot.flags.store(0, std::memory_order_relaxed);
  slot.state.store(st(SlotState::Free), std::memory_order_release);
}

void comm_copy(ShmSlot& slot, const char* comm) {
  size_t i = 0;
  for (; comm && comm[i] && i + 1 < sizeof slot.comm; ++i) slot.comm[i] = comm[i];
  for (; i < sizeof slot.comm; ++i) slot.comm[i] = '\0';
}

// Raises the high-water mark to cover slot index `i`.
void slots_used_cover(ShmSegment& seg, unsigned i) {
  uint32_t used = seg.exited.slots_used.load(std::memory_order_relaxed);
  while (used < i + 1 && !seg.exited.slots_used.compare_exchange_weak(used, i + 1, std::memory_order_relaxed)) {
  }
}

// Scans from the first slot: free slots are taken lowest first, so the slots in use
// stay packed below the high-water mark and the file's untouched tail takes no memory.
ShmSlot* claim_free(ShmSegment& seg, int pid, uint32_t pid_ns, uint64_t start_time, const char* comm,
                    uint64_t seen_seq, uint64_t now_unix_ns) {
  for (unsigned i = 0; i < kMaxSlots; ++i) {
    ShmSlot& slot = seg.slots[i];
    uint32_t expected = st(SlotState::Free);
    if (slot.state.load(std::memory_order_relaxed) != expected) continue;
    if (!slot.state.compare_exchange_strong(expected, st(SlotState::Claiming), std::memory_order_acq_rel)) continue;
    slots_used_cover(seg, i);
    seg.slot_ns.pid_ns[i].store(pid_ns, std::memory_order_relaxed);  // before the pid: reclaim reads both
    slot.pid.store(pid, std::memory_order_relaxed);
    slot.start_time.store(start_time, std::memory_order_relaxed);
    slot.seen_seq.store(seen_seq, std::memory_order_relaxed);
    slot.attached_unix_ns.store(now_unix_ns, std::memory_order_relaxed);
    slot.waiting.store(0, std::memory_order_relaxed);
    slot.flags.store(0, std::memory_order_relaxed);
    slot.sv_calls.store(0, std::memory_order_relaxed);
    slot.lib_version.store(BONSAI_VERSION_CODE, std::memory_order_relaxed);
    comm_copy(slot, comm);
    counters_reset(slot.counters);
    slot.state.store(st(SlotState::Live), std::memory_order_release);
    return &slot;
  }
  return nullptr;
}

}  // namespace

uint32_t slot_version_code() noexcept { return BONSAI_VERSION_CODE; }

unsigned slots_scan_end(const ShmSegment& seg) noexcept {
  uint32_t used = seg.exited.slots_used.load(std::memory_order_relaxed);
  return used < kMaxSlots ? used : kMaxSlots;
}

ShmSlot* slot_claim(ShmSegment& seg, int pid, uint64_t start_time, const char* comm, uint64_t seen_seq,
                    uint64_t now_unix_ns) noexcept {
  // `pid` is a pid of the claimer's namespace (a container's own pids): recorded with it.
  uint32_t ns = proc_self_pidns();
  unsigned end = slots_scan_end(seg);
  for (unsigned i = 0; i < end; ++i) {  // after exec: same process, same slot, counts go on
    ShmSlot& slot = seg.slots[i];
    if (slot.state.load(std::memory_order_acquire) == st(SlotState::Live) &&
        slot.pid.load(std::memory_order_relaxed) == pid &&
        seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed) == ns &&
        slot.start_time.load(std::memory_order_relaxed) == start_time) {
      slot.seen_seq.store(seen_seq, std::memory_order_relaxed);
      slot.waiting.store(0, std::memory_order_relaxed);  // exec left one thread, not waiting
      // The library now running it: after an upgrade, another release than the forker's.
      slot.lib_version.store(BONSAI_VERSION_CODE, std::memory_order_relaxed);
      // Named after the program it runs now (the name from before exec was kept).
      if (comm && comm[0]) comm_copy(slot, comm);
      return &slot;
    }
  }
  if (ShmSlot* s = claim_free(seg, pid, ns, start_time, comm, seen_seq, now_unix_ns)) return s;
  if (slots_reclaim_dead(seg))
    if (ShmSlot* s = claim_free(seg, pid, ns, start_time, comm, seen_seq, now_unix_ns)) return s;
  seg.exited.uncounted.fetch_add(1, std::memory_order_relaxed);  // `stat` says so
  return nullptr;
}

bool slot_release(ShmSegment& seg, ShmSlot& slot) noexcept {
  uint32_t expected = st(SlotState::Live);
  if (!slot.state.compare_exchange_strong(expected, st(SlotState::Folding), std::memory_order_acq_rel)) return false;
  fold_counters(seg, slot.counters);
  seg.exited.processes.fetch_add(1, std::memory_order_relaxed);
  slot_free(slot);
  return true;
}

unsigned slots_reclaim_dead(ShmSegment& seg, bool other_ns) noexcept {
  unsigned n = 0;
  unsigned end = slots_scan_end(seg);
  uint32_t self = proc_self_pidns();
  for (unsigned i = 0; i < end; ++i) {
    ShmSlot& slot = seg.slots[i];
    uint32_t s = slot.state.load(std::memory_order_acquire);
    if (s != st(SlotState::Live) && s != st(SlotState::Claiming)) continue;
    int pid = slot.pid.load(std::memory_order_relaxed);
    if (pid <= 0) continue;  // a claim in progress has not written its pid yet
    // Another pid namespace's pid is not ours to look up in our /proc (a container's 1
    // is not our init): proc_of_slot maps it, or says it cannot see that namespace.
    uint32_t ns = seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed);
    if (!other_ns && ns != 0 && ns != self) continue;
    int here = 0;
    if (s == st(SlotState::Live)) {
      if (proc_of_slot(self, ns, pid, slot.start_time.load(std::memory_order_relaxed), here) != SlotProc::Dead)
        continue;
      n += slot_release(seg, slot) ? 1 : 0;
    } else {  // died while claiming (its start time may not be written yet): nothing to fold
      if (ns != 0 && ns != self) continue;  // cannot tell without its start time: its claim finishes, or a
                                            // later reclaim finds it Live and dead
      uint64_t start;
      if (proc_status(pid, start) == ProcStatus::Alive) continue;
      uint32_t expected = s;
      if (slot.state.compare_exchange_strong(expected, st(SlotState::Folding), std::memory_order_acq_rel)) {
        slot_free(slot);
        ++n;
      }
    }
  }
  return n;
}

void slot_wait_enter(ShmSlot* slot) noexcept {
  if (slot) slot->waiting.fetch_add(1, std::memory_order_relaxed);
}

void slot_wait_leave(ShmSlot* slot) noexcept {
  if (!slot) return;
  uint32_t n = slot->waiting.load(std::memory_order_relaxed);
  while (n && !slot->waiting.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) {
  }
}

}  // namespace bonsai
