// SPDX-License-Identifier: MIT
// Slot claim, release and reclaim (see shm_slots.h).
#include "shm/shm_slots.h"

#include <cstddef>

#include "shm/shm_proc.h"
#include "sys/raw_syscall.h"

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

// Every claim and every free moves the epoch: a table found full, or a process known
// to hold no slot, stays so only while it has not moved (slot_claim's hints).
void epoch_move(ShmSegment& seg) { seg.exited.slot_epoch.fetch_add(1, std::memory_order_acq_rel); }

void slot_free(ShmSegment& seg, ShmSlot& slot) {
  slot.pid.store(0, std::memory_order_relaxed);
  slot.start_time.store(0, std::memory_order_relaxed);
  slot.waiting.store(0, std::memory_order_relaxed);
  slot.flags.store(0, std::memory_order_relaxed);
  slot.state.store(st(SlotState::Free), std::memory_order_release);
  epoch_move(seg);
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
                    uint64_t seen_seq, uint64_t now_unix_ns, unsigned from = 0) {
  for (unsigned i = from; i < kMaxSlots; ++i) {
    ShmSlot& slot = seg.slots[i];
    uint32_t expected = st(SlotState::Free);
    if (slot.state.load(std::memory_order_relaxed) != expected) continue;
    if (!slot.state.compare_exchange_strong(expected, st(SlotState::Claiming), std::memory_order_acq_rel)) continue;
    epoch_move(seg);  // before the pid is written: a process that reads the old epoch has no slot yet
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

// Our namespace's processes by /proc/PID/stat: each distinct pid read once (a table of
// forged slots naming one pid costs one read), at most `budget` reads (then Unknown).
constexpr unsigned kPidCache = 8;
struct OwnNsCache {
  uint32_t self;
  unsigned budget;
  unsigned n = 0, next = 0;
  int pid[kPidCache] = {};
  uint64_t start[kPidCache] = {};  // 0: gone
};

SlotProc own_ns_judge(void* ctx, uint32_t ns, int pid, uint64_t start, int& here) noexcept {
  auto& c = *static_cast<OwnNsCache*>(ctx);
  if (pid <= 0 || (ns != 0 && ns != c.self)) return SlotProc::Unknown;  // not ours to look up
  uint64_t now = 0;
  bool cached = false;
  for (unsigned k = 0; k < c.n && !cached; ++k)
    if (c.pid[k] == pid) now = c.start[k], cached = true;
  if (!cached) {
    if (c.budget == 0) return SlotProc::Unknown;
    --c.budget;
    if (proc_status(pid, now) != ProcStatus::Alive) now = 0;
    unsigned k = c.n < kPidCache ? c.n++ : c.next++ % kPidCache;
    c.pid[k] = pid;
    c.start[k] = now;
  }
  if (now == 0 || (start != kAnyStart && start != now)) return SlotProc::Dead;
  here = pid;
  return SlotProc::Alive;
}

// Takes slot `i` from state `from` to Folding if it still names (pid, start, ns) as
// judged: a slot released and claimed again meanwhile is another process's, left alone.
bool take_for_reclaim(ShmSegment& seg, unsigned i, uint32_t from, int pid, uint64_t start, uint32_t ns) {
  ShmSlot& slot = seg.slots[i];
  uint32_t expected = from;
  if (!slot.state.compare_exchange_strong(expected, st(SlotState::Folding), std::memory_order_acq_rel)) return false;
  if (slot.pid.load(std::memory_order_relaxed) == pid && slot.start_time.load(std::memory_order_relaxed) == start &&
      seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed) == ns)
    return true;
  slot.state.store(from, std::memory_order_release);
  return false;
}

// What a claim reads of each slot: its identity. Read with pread() on the segment's
// descriptor where the caller has one: a slot touched through the mapping costs a page
// fault and a page-table entry in every new process (a claim runs in every fork child
// and after every exec), and a tenant can make all 1,024 slots look taken; a pread
// copies 16 bytes. Values are hints: every decision is checked again on the mapping.
struct SlotHead {
  uint32_t state;
  int32_t pid;
  uint64_t start;
  uint32_t ns;
};

class SlotHeads {
 public:
  SlotHeads(ShmSegment& seg, int fd, unsigned end) : seg_(seg), fd_(fd) {
    if (fd_ < 0) return;
    long want = static_cast<long>(end * sizeof ns_[0]);
    if (end && raw_syscall4(SYS_pread64, fd_, reinterpret_cast<long>(ns_), want,
                            static_cast<long>(offsetof(ShmSegment, slot_ns))) != want)
      fd_ = -1;  // not the file we think: read the mapping
  }
  SlotHead at(unsigned i) const {
    if (fd_ >= 0) {
      struct {
        uint32_t state;
        int32_t pid;
        uint64_t start;
      } raw{};
      long off = static_cast<long>(offsetof(ShmSegment, slots) + i * sizeof(ShmSlot));
      if (raw_syscall4(SYS_pread64, fd_, reinterpret_cast<long>(&raw), sizeof raw, off) == sizeof raw)
        return SlotHead{raw.state, raw.pid, raw.start, ns_[i]};
      return SlotHead{st(SlotState::Folding), 0, 0, 0};  // unreadable: skipped
    }
    const ShmSlot& slot = seg_.slots[i];
    return SlotHead{slot.state.load(std::memory_order_acquire), slot.pid.load(std::memory_order_relaxed),
                    slot.start_time.load(std::memory_order_relaxed),
                    seg_.slot_ns.pid_ns[i].load(std::memory_order_relaxed)};
  }

 private:
  ShmSegment& seg_;
  int fd_;
  uint32_t ns_[kMaxSlots];
};

// Slot i, if it is this very process's (after exec: same process, same slot, counts go on).
ShmSlot* adopt_own(ShmSegment& seg, unsigned i, int pid, uint32_t ns, uint64_t start_time, const char* comm,
                   uint64_t seen_seq) {
  ShmSlot& slot = seg.slots[i];
  if (slot.state.load(std::memory_order_acquire) != st(SlotState::Live) ||
      slot.pid.load(std::memory_order_relaxed) != pid ||
      seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed) != ns ||
      slot.start_time.load(std::memory_order_relaxed) != start_time)
    return nullptr;
  slot.seen_seq.store(seen_seq, std::memory_order_relaxed);
  slot.waiting.store(0, std::memory_order_relaxed);  // exec left one thread, not waiting
  // The library now running it: after an upgrade, another release than the forker's.
  slot.lib_version.store(BONSAI_VERSION_CODE, std::memory_order_relaxed);
  // Named after the program it runs now (the name from before exec was kept).
  if (comm && comm[0]) comm_copy(slot, comm);
  return &slot;
}

constinit std::atomic<bool> g_failure_news{false};

}  // namespace

uint32_t slot_version_code() noexcept { return BONSAI_VERSION_CODE; }

unsigned slots_scan_end(const ShmSegment& seg) noexcept {
  uint32_t used = seg.exited.slots_used.load(std::memory_order_relaxed);
  return used < kMaxSlots ? used : kMaxSlots;
}

ShmSlot* slot_claim(ShmSegment& seg, int pid, uint64_t start_time, const char* comm, uint64_t seen_seq,
                    uint64_t now_unix_ns, int fd, SlotKnown* known) noexcept {
  // `pid` is a pid of the claimer's namespace (a container's own pids): recorded with it.
  uint32_t ns = proc_self_pidns();
  unsigned end = slots_scan_end(seg);
  uint64_t epoch = seg.exited.slot_epoch.load(std::memory_order_acquire);
  // After exec: the slot the image before held, if it still names this very process.
  if (known && known->index < end) {
    if (ShmSlot* s = adopt_own(seg, known->index, pid, ns, start_time, comm, seen_seq)) {
      known->epoch = seg.exited.slot_epoch.load(std::memory_order_acquire);
      return s;
    }
  }
  // No slot names us (no claim since that was known): the pass only looks for one to
  // take, and while the whole table was found full at this very epoch, only a window of
  // it (each claim its own, by pid: together they come round the table).
  const bool own_none = known && known->none && known->epoch == epoch;
  const bool window = own_none && end > kClaimWindow &&
                      seg.exited.full_epoch.load(std::memory_order_relaxed) == epoch + 1;
  const unsigned first = window ? static_cast<unsigned>(pid) * kClaimWindow % end : 0;
  const unsigned count = window ? kClaimWindow : end;
  SlotHeads heads(seg, fd, end);
  // One pass: our own slot (after exec: same process, same slot, counts go on), else the
  // lowest free one, else one that a few reads of /proc prove dead.
  OwnNsCache cache{ns, window ? 2 : kClaimProbes};
  unsigned free_at = kMaxSlots, dead_at = kMaxSlots;
  SlotHead dead{};
  for (unsigned k = 0; k < count; ++k) {
    const unsigned i = first + k < end ? first + k : first + k - end;
    SlotHead h = heads.at(i);
    if (!own_none && h.state == st(SlotState::Live) && h.pid == pid && h.ns == ns && h.start == start_time) {
      if (ShmSlot* s = adopt_own(seg, i, pid, ns, start_time, comm, seen_seq)) {
        if (known) known->epoch = seg.exited.slot_epoch.load(std::memory_order_acquire);
        return s;
      }
    }
    if (free_at < kMaxSlots || dead_at < kMaxSlots) {
      if (own_none) break;  // nothing more to look for
      continue;
    }
    if (h.state == st(SlotState::Free)) {
      free_at = i;
    } else if ((h.state == st(SlotState::Live) || h.state == st(SlotState::Claiming)) && h.pid > 0) {
      int here = 0;
      uint64_t start = h.state == st(SlotState::Live) ? h.start : kAnyStart;
      if (own_ns_judge(&cache, h.ns, h.pid, start, here) == SlotProc::Dead) dead_at = i, dead = h;
    }
  }
  if (known) known->epoch = epoch;  // what this claim saw before it took anything
  // Free slots are taken lowest first, past the high-water mark only when none is below
  // it (a window takes only what it saw: past the mark is for whole passes).
  unsigned from = free_at < end ? free_at : window ? kMaxSlots : end;
  if (ShmSlot* s = claim_free(seg, pid, ns, start_time, comm, seen_seq, now_unix_ns, from)) return s;
  if (dead_at < kMaxSlots && take_for_reclaim(seg, dead_at, dead.state, dead.pid, dead.start, dead.ns)) {
    ShmSlot& slot = seg.slots[dead_at];
    if (dead.state == st(SlotState::Live)) {
      fold_counters(seg, slot.counters);
      seg.exited.processes.fetch_add(1, std::memory_order_relaxed);
    }
    slot_free(seg, slot);
    if (ShmSlot* s = claim_free(seg, pid, ns, start_time, comm, seen_seq, now_unix_ns, dead_at)) return s;
  }
  // A whole pass that found nothing: the claims after it look at a window only, until a
  // slot is claimed or freed (the epoch moves).
  if (!window) seg.exited.full_epoch.store(epoch + 1, std::memory_order_relaxed);
  uint64_t before = seg.exited.uncounted.fetch_add(1, std::memory_order_relaxed);  // `stat` says so
  g_failure_news.store(((before + 1) & before) == 0, std::memory_order_relaxed);
  return nullptr;
}

bool slot_claim_failure_is_news() noexcept { return g_failure_news.load(std::memory_order_relaxed); }

bool slot_release(ShmSegment& seg, ShmSlot& slot) noexcept {
  uint32_t expected = st(SlotState::Live);
  if (!slot.state.compare_exchange_strong(expected, st(SlotState::Folding), std::memory_order_acq_rel)) return false;
  fold_counters(seg, slot.counters);
  seg.exited.processes.fetch_add(1, std::memory_order_relaxed);
  slot_free(seg, slot);
  return true;
}

unsigned slots_reclaim(ShmSegment& seg, const SlotJudge& judge, unsigned max, unsigned first) noexcept {
  unsigned n = 0;
  unsigned end = slots_scan_end(seg);
  if (end == 0) return 0;
  first %= end;
  for (unsigned k = 0; k < end && n < max; ++k) {
    unsigned i = first + k < end ? first + k : first + k - end;
    ShmSlot& slot = seg.slots[i];
    uint32_t s = slot.state.load(std::memory_order_acquire);
    if (s != st(SlotState::Live) && s != st(SlotState::Claiming)) continue;
    uint32_t ns = seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed);
    int pid = slot.pid.load(std::memory_order_relaxed);
    if (pid <= 0) continue;  // a claim in progress has not written its pid yet
    uint64_t start = slot.start_time.load(std::memory_order_relaxed);
    // Claiming: the claimer died while claiming, or is still at it (its start time may
    // not be written yet): any process of that pid keeps it. Nothing to fold.
    int here = 0;
    if (judge.judge(judge.ctx, ns, pid, s == st(SlotState::Live) ? start : kAnyStart, here) != SlotProc::Dead)
      continue;
    if (!take_for_reclaim(seg, i, s, pid, start, ns)) continue;
    if (s == st(SlotState::Live)) {
      fold_counters(seg, slot.counters);
      seg.exited.processes.fetch_add(1, std::memory_order_relaxed);
    }
    slot_free(seg, slot);
    ++n;
  }
  return n;
}

unsigned slots_reclaim_dead(ShmSegment& seg) noexcept {
  OwnNsCache cache{proc_self_pidns(), kMaxSlots};
  return slots_reclaim(seg, SlotJudge{own_ns_judge, &cache});
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
