// SPDX-License-Identifier: MIT
// Per-process slots of a segment: claim (or adopt after exec), release with the
// counters folded into the service's exited totals, and reclaim of the slots of
// dead processes (pid plus start time, so a reused pid is not mistaken for the
// owner). Used by the library (constructor, fork, exit) and by bonsaictl (stat, ls).
// Lock-free (CAS on each slot's state); raw system calls only.
#pragma once
#include <cstdint>

#include "abi/shm_abi.h"

namespace bonsai {

// Claims a slot for the process (pid, start_time): the live slot it already holds
// (same process after exec), else a free one, else one reclaimed from a dead
// process. Counters of a new slot start at zero.
// @return the slot, or nullptr if all kMaxSlots are held by live processes (then
// seg.exited.uncounted is raised: `bonsaictl stat` reports such processes).
ShmSlot* slot_claim(ShmSegment& seg, int pid, uint64_t start_time, const char* comm,
                    uint64_t seen_seq, uint64_t now_unix_ns) noexcept;

// Folds a live slot's counters into seg.exited and frees it. Exactly one caller
// wins for a given slot (CAS Live -> Folding). @return true if this call did it.
bool slot_release(ShmSegment& seg, ShmSlot& slot) noexcept;

// Releases every slot whose process is gone (and frees slots left half-claimed
// by a process that died while claiming). `other_ns`: also the slots of other pid
// namespaces (containers', issue #47), each looked up by a scan of /proc
// (shm_proc.h proc_of_slot): bonsaictl's readers only; a claim (the library, in a
// host process) leaves them to those. @return slots reclaimed.
unsigned slots_reclaim_dead(ShmSegment& seg, bool other_ns = false) noexcept;

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
