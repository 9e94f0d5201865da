// SPDX-License-Identifier: MIT
// Per-process slots of a segment: claim (or adopt after exec), release with the
// counters folded into the service's exited totals, and reclaim of the slots of
// dead processes (pid plus start time, so a reused pid is not mistaken for the
// owner). Used by the library (constructor, fork, exit) and by bonsaictl (stat, ls).
// A tenant may have written any slot: what a claim costs is bounded, and a slot is
// reclaimed only when its process is proved dead. Lock-free (CAS on each slot's
// state); raw system calls only.
#pragma once
#include <cstdint>

#include "abi/shm_abi.h"
#include "shm/shm_proc.h"

namespace bonsai {

// How a reader tells whether the process a slot names is alive: `judge(ctx, ns, pid,
// start, here)` for a slot of pid namespace `ns` (0: unknown, taken as the reader's),
// pid `pid` there, start time `start` (kAnyStart: a claim in progress, whose start time
// may not be written yet: any process of that pid). Alive sets `here` to the reader's
// pid for it. Everything in a slot is untrusted (a tenant maps the segment read-write):
// Dead must be proved (that namespace's `pid` is gone or started at another time, and
// no other reading of the slot finds a live process), anything else is Unknown.
struct SlotJudge {
  SlotProc (*judge)(void* ctx, uint32_t ns, int pid, uint64_t start, int& here) noexcept;
  void* ctx;
};
inline constexpr uint64_t kAnyStart = ~uint64_t{0};

// Claims a slot for the process (pid, start_time): the live slot it already holds
// (same process after exec), else a free one, else one reclaimed from a dead
// process. Counters of a new slot start at zero. Bounded whatever the segment holds:
// one pass over the slots' identities (read with pread() on `fd`, the segment's open
// descriptor, when the caller has one: no page of a slot is mapped in but the one
// taken), at most kClaimProbes reads of /proc (one per distinct pid, our namespace's
// slots only) and one slot reclaimed, however many slots look taken.
// @return the slot, or nullptr if no slot was free and none of those probed was
// proved dead (then seg.exited.uncounted is raised: `bonsaictl stat` reports such
// processes; slot_claim_failure_is_news says whether to say so).
//
// `known` (may be null): what the claimer knows of its own slot without a pass. A fork
// child's pid is new, an exec keeps the pid and the image before says which slot it
// held: then the pass is needed only to find a slot to take, and while the table is as
// full as a whole pass last found it (seg.exited.full_epoch), a claim looks at
// kClaimWindow slots only (from a place its pid picks), not at every slot a tenant
// made look taken. Untrusted (the environment, the segment): a slot named is taken
// only if it names this very process (pid, start time, namespace); "none" holds only
// while seg.exited.slot_epoch is the value it was known at (no claim since).
struct SlotKnown {
  unsigned index = kMaxSlots;  // in: the slot this process held before its exec (kMaxSlots: none)
  bool none = false;           // in: no slot named this process while slot_epoch was `epoch`
  uint64_t epoch = 0;          // in: see `none`; out: slot_epoch as this claim left it
};
ShmSlot* slot_claim(ShmSegment& seg, int pid, uint64_t start_time, const char* comm,
                    uint64_t seen_seq, uint64_t now_unix_ns, int fd = -1, SlotKnown* known = nullptr) noexcept;
inline constexpr unsigned kClaimProbes = 8;
inline constexpr unsigned kClaimWindow = 16;

// After a slot_claim of this process returned nullptr: whether that is worth a line on
// stderr. True for the service's 1st, 2nd, 4th, 8th... process that found no slot (the
// segment's count of them), so a table held full, by live processes or forged slots,
// costs the service's processes log2(N) lines in all, not one each.
bool slot_claim_failure_is_news() noexcept;

// Folds a live slot's counters into seg.exited and frees it. Exactly one caller
// wins for a given slot (CAS Live -> Folding). @return true if this call did it.
bool slot_release(ShmSegment& seg, ShmSlot& slot) noexcept;

// Releases the slots whose process `judge` proves dead (and frees slots left
// half-claimed by a process that died while claiming), at most `max` of them, looking
// at the slots from index `first` round. @return slots reclaimed.
unsigned slots_reclaim(ShmSegment& seg, const SlotJudge& judge, unsigned max = kMaxSlots,
                       unsigned first = 0) noexcept;

// slots_reclaim for a reader that looks at its own pid namespace's slots only (the
// others need a pass over /proc: bonsaictl's readers, bonsaictl/segment/proc_table.h):
// /proc/PID/stat read once per distinct pid. @return slots reclaimed.
unsigned slots_reclaim_dead(ShmSegment& seg) noexcept;

// The version_code() this build writes into the slots it claims (the file VERSION).
uint32_t slot_version_code() noexcept;

// Slots at and past this index were never claimed: scans stop here (the
// high-water mark seg.exited.slots_used, clamped to kMaxSlots).
unsigned slots_scan_end(const ShmSegment& seg) noexcept;

// A thread of the slot's process starts / ends a limiter wait (slow path only):
// `bonsaictl set --wait` waits for the processes asleep under old limits. Null: no-op.
// The count never goes below zero.
void slot_wait_enter(ShmSlot* slot) noexcept;
void slot_wait_leave(ShmSlot* slot) noexcept;

// Index of `slot` in seg.slots (for messages and tests).
inline unsigned slot_index(const ShmSegment& seg, const ShmSlot& slot) noexcept {
  return static_cast<unsigned>(&slot - seg.slots);
}

}  // namespace bonsai
