// SPDX-License-Identifier: MIT
// The library's side of a service segment: attach in the constructor (BONSAI_SERVICE),
// re-read the limits when their sequence moves, a new slot for a forked child, the
// slot's release at exit. Runs inside the host process: raw system calls, no
// allocation, no exceptions, no logging (callers log the reason it returns).
#pragma once
#include <cstddef>
#include <cstdint>

#include "abi/shm_abi.h"

namespace bonsai {

struct ShmAttach {
  BucketState* shared_buckets;       // scope service: the segment's buckets; else nullptr
  ProcessCounters* counters;         // this process's slot, or nullptr if no slot was free
  WaitHist* wait_hist;               // the service's histogram of held calls' waits
  ShmShares* shares;                 // the service's shares accounting
  ShmFleet* fleet;                   // the service's fleet block (its lease: runtime/fleet_lapse.h)
  ShmProtect* protect;               // the service's protect block (abi/protect_hist.h)
  const std::atomic<uint64_t>* seq;  // the limits' sequence to watch
  LimitSet limits;                   // the limits in force at attach
  uint64_t limits_seq;
  const char* limits_problem;        // non-null: `limits` unusable (why)
};

// A service member attaches in two steps. At start, shm_open_service opens and checks
// the segment of `service` (under `prefix`, may be null) and keeps its descriptor (uid
// changes and exec hand it down: shm_fd.h); no page of it is touched. At the process's
// first limited call (runtime/limiter_setup.cc), shm_map_service maps it, checks it and
// claims a slot: a process that makes none (most of a shell script's) costs a start as
// little as the library alone, and is not listed by `bonsaictl stat`.
// @return true, or false with `why` set (one line; empty when the problem is one said
// once per service and another process said it).
bool shm_open_service(const char* service, const char* prefix, char* why, size_t cap) noexcept;
// `slot_hint`: BONSAI_SLOT as the image before this exec left it (may be null), used
// only if it names this very process (pid and start time).
// @return true with `out` filled; false with `why` set and nothing mapped.
bool shm_map_service(ShmAttach& out, char* why, size_t cap, const char* slot_hint = nullptr) noexcept;

// After shm_open_service: is the segment of this build's layout (magic and version, read
// through the descriptor)? Not: the caller maps it at once, so that what is wrong with
// it (a newer bonsai's) is said at start, once for the service, as before.
bool shm_open_layout_ours() noexcept;

// True once shm_map_service succeeded in this process.
bool shm_attached() noexcept;

// Shares without the host segment: adds `units` taken at a guaranteed rate of a rule that
// borrows from capacity rule `host1` to the segment's ShmLimits::nohost_taken (relaxed,
// no-op beyond kNoHostPublished or without a segment).
void shm_publish_nohost(uint8_t host1, uint64_t units) noexcept;

// For a problem said once for the whole service (a kNotice* bit of abi/shm_abi.h): sets
// the bit in the segment's notices word. @return true if this process is the one to say
// it (the first of the service; or no segment attached: nobody else can say it).
bool shm_notice_first(uint32_t bit) noexcept;

// True once the segment was truncated under us (a SIGBUS inside it; see
// shm/shm_guard.h): the mapping now holds private zeroed memory, the limits in
// force stay installed, buckets and counters are this process's own from then on.
bool shm_lost() noexcept;

// Reads the current limits (seqlock). Only one caller per new sequence number gets
// true (the others keep the limits in force), so concurrent threads install once.
// @return true with `out`/`seq` set if they are new, usable limits to install;
// `problem` set (and false) if the new limits are unusable.
bool shm_limits_fetch(LimitSet& out, uint64_t& seq, const char*& problem) noexcept;

// The segment's limits sequence as it is now (odd: being rewritten), 0 without a
// segment or once it was lost: what the published join filter is checked against.
// Read through the kept descriptor while the segment is not mapped yet.
uint64_t shm_limits_seq_now() noexcept;

// Would the service's static children be supervised now (abi/sv_join.h,
// sv_service_supervised)? Read from the mapping, or through the kept descriptor while it
// is not mapped yet. true when it cannot tell for sure (no segment, another layout, a
// change under way): the trampoline then decides. Raw system calls only (after vfork).
bool shm_service_supervised() noexcept;

// Records in the slot that this process now enforces limits `seq` (bonsaictl set --wait).
void shm_mark_seen(uint64_t seq) noexcept;

// Around a limiter wait (slow path): counts the thread as asleep in this process's
// slot, so that `bonsaictl set --wait` knows who still runs under old limits.
// shm_wait_begin returns the slot to hand to shm_wait_end (nullptr if none).
ShmSlot* shm_wait_begin() noexcept;
void shm_wait_end(ShmSlot* slot) noexcept;

// Sets `bit` (a kSlot* flag) in this process's slot, if it has one.
void shm_mark_flag(uint32_t bit) noexcept;

// For an exec: "BONSAI_SLOT=PID:START:INDEX:EPOCH", what this process knows of its slot
// (INDEX kMaxSlots: none while the slots' epoch is EPOCH), so the program it executes
// (same pid) finds its slot, or knows it has none, without a pass over every slot.
// Writes no global (safe in a vfork()ed child: there the pid is another, nothing is
// written). @return its length (0: nothing to hand down).
size_t shm_slot_hint(char* out, size_t cap) noexcept;

// In a forked child (atfork handler): the parent's slot is not this process's (counts
// must not go there); the child claims its own at its first call (shm_fork_counters).
void shm_fork_drop_slot() noexcept;

// In a forked child: claims a slot of its own.
// @return its counters; `fallback` if no slot was free; `current` if not attached.
ProcessCounters* shm_fork_counters(ProcessCounters* current, ProcessCounters* fallback) noexcept;

// At exit: folds this process's counters into the service totals and frees its slot.
// The caller first stops counting into the slot.
void shm_release_at_exit() noexcept;

}  // namespace bonsai
