// SPDX-License-Identifier: MIT
// The layout of a service's shared-memory segment (/<prefix>bonsai.<uid>.<service>),
// shared by libbonsai (which trusts none of it) and bonsaictl (which owns it).
// Plain fixed-size data: no pointers.
//
// Releases read what the release before them made (docs/upgrades.md). Since layout 15 a
// segment is the *base* -- ShmSegment below, frozen exactly as layout 14 (the release
// 0.2.0) laid it out -- followed by a section directory (ShmSectionDir) listing whatever
// later layouts add, each section by id, offset and size. So:
//  - never change a structure of the base (the static_asserts at the end hold its size
//    and fingerprint): add a section instead (a new ShmSectionId, its struct, bonsaictl
//    lists it when it creates a segment) and bump BONSAI_ABI_VERSION; a reader uses a
//    section only if the directory lists it with the size it expects, so older readers
//    simply lack the feature and newer ones find it absent in older segments;
//  - a change no older reader may ignore sets ShmSectionDir::oldest_reader to the new
//    version: older readers then refuse the segment as "made by a newer bonsai".
// Layout 14 segments (no directory) are read and written in place: the base is theirs.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/bucket_state.h"
#include "abi/calls.h"
#include "abi/counters_abi.h"
#include "abi/fleet_abi.h"
#include "abi/limits_abi.h"
#include "abi/protect_hist.h"
#include "abi/wait_hist.h"

#define BONSAI_ABI_VERSION 15 // 15: the section directory after the frozen base (ShmSectionDir);
                              //     ShmExited::notices (was padding); ShmLimits::nohost_taken (was padding)
                              // 14: ShmSegment::protect (protected calls' durations)
                              // 13: ShmFleet namespace, expected_hosts, id_clash
                              // 12: ShmSegment::slot_ns (containers)
                              // 11: ShmSlot::sv_calls (strict mode); 2: ProcessCounters and ShmExited gained wire_bytes[]
                              // 3: 1024 slots, slots_used/uncounted, ShmSlot::waiting
                              // 4: ShmSlot::flags (kSlotSupervised)
                              // 5: ShmSegment::wait_hist
                              // 6: ShmSlot::lib_version
                              // 7: BucketState::late_ns
                              // 8: ProcessCounters, ShmExited: refused, shortened, held_ns;
                              //    BucketState::light_tat_ns
                              // 9: ShmSegment::fleet (fleet-wide caps)
                              // 10: shares: Rule::ceil, Rule::host1 (Rule is 40
                              //    bytes), BucketState::ceil_tat_ns, ShmSegment::shares;
                              //    the host segment (abi/host_abi.h). 9 and 10 landed together.

namespace bonsai {

inline constexpr uint64_t kShmMagic = 0x314d48534e4f4231ull;  // "1BONSHM1"
// The oldest layout this build reads (and writes in place): the first release's, 0.2.0.
inline constexpr uint32_t kShmOldestLayout = 14;
inline constexpr uint32_t kMaxSlots = 1024;       // processes attached at once (the file is
                                                   // ~10 MiB, sparse: only used slots take memory)
inline constexpr size_t kServiceNameMax = 63;      // [A-Za-z0-9_.-], not starting with '.'

enum class ShmScope : uint32_t { Process = 0, Service = 1 };

// Slot states. Free -> Claiming (CAS by the attaching process) -> Live;
// Live -> Folding (CAS by whoever reclaims or releases it) -> Free.
enum class SlotState : uint32_t { Free = 0, Claiming = 1, Live = 2, Folding = 3 };

// Shares accounting per rule (bucket/share.h), the service's processes together:
// relaxed adds on the refill path only (never per call).
struct alignas(64) ShmShares {
  std::atomic<uint64_t> borrowed[kMaxRules];     // units taken from the host beyond the rate
  std::atomic<uint64_t> held_rate_ns[kMaxRules]; // time calls waited for the rate (or host)
  std::atomic<uint64_t> held_ceil_ns[kMaxRules]; // time calls waited for the ceiling
};

// The pid namespace of each slot's process (docs/reference/containers.md): the inode
// of its /proc/self/ns/pid, written by the claimer before the slot goes Live; 0 if it
// could not tell. A slot's pid is a pid in that namespace: a container's process has
// its own pids (its first is 1), so a reader in another namespace maps (namespace,
// pid) to a pid of its own (bonsaictl's segment/proc_table.h, one table a look) before
// it names the process; the claimer writes all of it, so nothing here proves a process
// is a host process (docs/reference/containers.md "Host pids"). Apart from the slots: the slots'
// first cache line is full.
struct alignas(64) ShmSlotNs {
  std::atomic<uint32_t> pid_ns[kMaxSlots];
};

// A fingerprint of everything whose size the layout depends on: a reader built
// against other sizes refuses the segment even if someone forgot to bump the version.
inline constexpr uint64_t shm_layout_fingerprint() {
  return (uint64_t{kCallCount} << 0) ^ (uint64_t{kCounterLanes} << 8) ^ (uint64_t{kMaxRules} << 16) ^
         (uint64_t{kMaxSlots} << 24) ^ (uint64_t{sizeof(ProcessCounters)} << 32) ^
         (uint64_t{sizeof(LimitSet)} << 48) ^
         (uint64_t{sizeof(CallLane)} << 56) ^ (uint64_t{kWaitBuckets} << 40) ^
         (uint64_t{sizeof(ShmShares)} << 12) ^ (uint64_t{sizeof(Rule)} << 4) ^
         (uint64_t{sizeof(ShmFleet)} << 28) ^ (uint64_t{sizeof(ShmSlotNs)} << 20) ^
         (uint64_t{sizeof(ShmProtect)} << 44);
}

// Cache line 0: identity. Written once by bonsaictl when it creates the segment
// (scope may be rewritten by `load`; attached processes keep the scope they saw).
struct alignas(64) ShmHeader {
  uint64_t magic;         // kShmMagic
  uint32_t version;       // BONSAI_ABI_VERSION
  uint32_t max_slots;     // kMaxSlots
  uint64_t size;          // layout 14: sizeof(ShmSegment); 15 on: every byte it spans (base, directory, sections)
  uint64_t fingerprint;   // shm_layout_fingerprint()
  std::atomic<uint32_t> scope;  // ShmScope
  uint32_t uid;           // owner, as bonsaictl saw it
  uint64_t created_unix_ns;
  char service[16];       // first bytes of the name, for humans (the file name is the truth)
};

// The limits in force, behind a sequence counter (seqlock): odd while a writer is
// changing `set`; readers copy and retry while it was odd or moved. Readers and
// writers copy `set` word by word with atomics (see shm/seqlock.h).
struct alignas(64) ShmLimits {
  std::atomic<uint64_t> seq;        // even: stable; starts at 2
  std::atomic<uint64_t> changed_unix_ns;  // when the last change was published
  // Shares: units the service's processes without the host segment (a container's,
  // kSlotNoHost) took at their guaranteed rates, per host capacity rule 1..6 (`host1 - 1`):
  // the host's bucket never saw them, so its borrowers hold that much back
  // (runtime/share_siblings.h), clamped to this service's own rates. Relaxed adds, one per
  // refill. Layout 14 kept these words as padding (zero), so older readers ignore them.
  std::atomic<uint64_t> nohost_taken[6];
  LimitSet set;
};
inline constexpr uint8_t kNoHostPublished = 6;  // capacity rules whose container takes are published

// Counts of processes that have exited (folded in when their slot is released or
// reclaimed), so that service totals survive them.
struct alignas(64) ShmExited {
  std::atomic<uint64_t> processes;
  std::atomic<uint64_t> uncounted;   // processes that found every slot taken (counted nowhere)
  std::atomic<uint32_t> slots_used;  // high-water mark: slots [0, slots_used) were ever claimed;
                                     // scans stop there (untrusted: clamp to kMaxSlots)
  std::atomic<uint32_t> notices;     // kNotice* bits: what the library said once for the whole
                                     // service (layout 14 wrote 0 here; frozen, any layout)
  // Hints for claims (shm/shm_slots.h), never trusted alone (layout 14 wrote 0 here and
  // 0.2.0's library does not move them): slot_epoch moves at every claim and every free of
  // a slot; full_epoch is slot_epoch + 1 while a claim's whole pass found no slot to take.
  std::atomic<uint64_t> slot_epoch;
  std::atomic<uint64_t> full_epoch;
  uint64_t pad_[3];
  std::atomic<uint64_t> calls[kCallCount];
  std::atomic<uint64_t> bytes[kCallCount];
  std::atomic<uint64_t> throttled[kCallCount];
  std::atomic<uint64_t> wait_ns[kCallCount];
  std::atomic<uint64_t> wire_bytes[kCallCount];  // compressed sockets only
  std::atomic<uint64_t> refused[kCallCount];     // non-blocking calls (runtime/pace.h)
  std::atomic<uint64_t> shortened[kCallCount];
  std::atomic<uint64_t> held_ns[kCallCount];
};

// ShmExited::notices: the first process of the service to meet the problem says it on
// its stderr and sets the bit; the others stay quiet (never 40 lines a second).
inline constexpr uint32_t kNoticeNewerLayout = 1;  // the segment is of a layout this build cannot read
inline constexpr uint32_t kNoticeNewerHost = 2;    // the host segment of shares is of such a layout
// The supervisors' rendezvous cannot be used (another user made its directory first, a
// file in its way): said by the first supervisor to meet it, cleared by one that serves.
inline constexpr uint32_t kNoticeRendezvous = 4;

// ShmSlot::flags: the process is held by a supervisor (`bonsaictl run --supervise`),
// which claimed the slot on its behalf and charges its system calls from outside.
inline constexpr uint32_t kSlotSupervised = 1;
// The process runs a static or Go program whose supervisor could not start:
// nothing charges its calls; `stat` says "NOT limited". Claimed by `bonsaictl sv-exec`.
inline constexpr uint32_t kSlotUnlimited = 2;
// The process set up an io_uring (the library saw io_uring_setup succeed through glibc's
// syscall()): what moves through the ring is not limited; `stat` says "io_uring: not
// limited" (it also finds rings made by inline system calls, in /proc/PID/fd).
inline constexpr uint32_t kSlotUring = 4;
// The process runs a dynamic program whose loader takes no build of the library (a 32-bit
// program, a libc bonsai has none for: docs/reference/libc.md): it runs without the
// library, nothing charges its calls; `stat` says "NOT limited". Claimed by `bonsaictl
// run` or `sv-exec --libc`.
inline constexpr uint32_t kSlotForeignLibc = 8;

// ShmSlot::lib_version: the release (the file VERSION) of the library or supervisor
// that claimed the slot, as (major << 16) | (minor << 8) | patch; 0 if unknown.
inline constexpr uint32_t version_code(uint32_t major, uint32_t minor, uint32_t patch) {
  return (major << 16) | ((minor & 0xff) << 8) | (patch & 0xff);
}

// One attached process. The first line is the slot's identity (written at claim,
// read by bonsaictl); the counters that follow start on their own cache lines.
struct alignas(64) ShmSlot {
  std::atomic<uint32_t> state;      // SlotState
  std::atomic<int32_t> pid;
  std::atomic<uint64_t> start_time; // /proc/PID/stat field 22 (clock ticks after boot)
  std::atomic<uint64_t> seen_seq;   // limits seq this process has installed
  std::atomic<uint64_t> attached_unix_ns;
  char comm[16];                    // /proc/PID/comm at attach, NUL-terminated
  std::atomic<uint32_t> waiting;    // threads asleep in a limiter wait (bonsaictl set --wait)
  std::atomic<uint32_t> flags;      // kSlot* bits (0 for a process running the library)
  std::atomic<uint32_t> lib_version;  // version_code() of the claimer (`stat` shows it)
  std::atomic<uint32_t> sv_calls;   // its calls a supervisor handled (strict mode: the unmarked ones), mod 2^32
  ProcessCounters counters;
};

struct ShmSegment {
  ShmHeader header;
  ShmLimits limits;
  BucketState buckets[kMaxRules];   // scope `service`: shared by every attached process
  ShmExited exited;
  ShmShares shares;
  WaitHist wait_hist;               // the service's held calls, all processes together
  ShmFleet fleet;                   // fleet-wide caps through Redis (abi/fleet_abi.h)
  ShmProtect protect;               // `protect:`: the protected calls' durations (abi/protect_hist.h)
  ShmSlot slots[kMaxSlots];
  ShmSlotNs slot_ns;                // per slot: its process's pid namespace
};

// ---- The section directory (layout 15 on), right after the base ----
inline constexpr uint64_t kShmDirMagic = 0x3152494453534e42ull;  // "BNSSDIR1"
inline constexpr uint32_t kShmMaxSections = 15;
// Every reader maps at most this much of a segment (the base, the directory, the sections).
inline constexpr uint64_t kShmSpanMax = uint64_t{64} << 20;

// Section ids: assigned here, never reused. A reader ignores ids it does not know.
enum class ShmSectionId : uint32_t {
  None = 0,  // no id: an entry with it is damage
  // The next layout's additions get 1, 2, ... (e.g. per-tenant limits, the fleet's new state).
};

struct ShmSectionEntry {
  uint32_t id;       // ShmSectionId
  uint32_t flags;    // 0 (reserved)
  uint64_t offset;   // from the start of the segment: 64-aligned, after the directory
  uint64_t size;     // bytes: a reader uses the section only if this is the size it expects
};

// Written once by bonsaictl when it creates the segment, before the magic; untrusted
// (the service's user can write it): readers copy it, then check the copy.
struct alignas(64) ShmSectionDir {
  uint64_t magic;          // kShmDirMagic
  uint32_t oldest_reader;  // the oldest layout that may read this segment (15 while
                           // every change only adds sections)
  uint32_t count;          // entries in use, <= kShmMaxSections
  ShmSectionEntry entries[kShmMaxSections];
};

// The base's size and fingerprint as layout 14 (0.2.0) made them: frozen.
inline constexpr uint64_t kShmBaseSize = 11295168;
inline constexpr uint64_t kShmBaseFingerprint = 0x1a4c2625002012a4ull;
inline constexpr uint64_t kShmDirOffset = kShmBaseSize;
// What this build's bonsaictl makes: the base, the directory, no section yet.
inline constexpr uint64_t kShmMadeSize = kShmBaseSize + sizeof(ShmSectionDir);

// ---- Layout checks (a runtime twin lives in tests/unit/shm_layout_test.cc) ----
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(ShmHeader) == 64);
static_assert(offsetof(ShmHeader, magic) == 0 && offsetof(ShmHeader, version) == 8 &&
              offsetof(ShmHeader, size) == 16 && offsetof(ShmHeader, fingerprint) == 24 &&
              offsetof(ShmHeader, scope) == 32 && offsetof(ShmHeader, uid) == 36);
static_assert(offsetof(ShmLimits, seq) == 0 && offsetof(ShmLimits, set) == 64);
static_assert(sizeof(ShmLimits) == 64 + ((sizeof(LimitSet) + 63) / 64) * 64);
static_assert(offsetof(ShmSlot, counters) == 64, "hot counters start on their own cache line");
static_assert(offsetof(ShmSlot, waiting) == 48 && offsetof(ShmSlot, lib_version) == 56 &&
              offsetof(ShmExited, calls) == 64);
static_assert(sizeof(ShmSlot) % 64 == 0 && sizeof(ShmExited) % 64 == 0);
static_assert(offsetof(ShmSegment, limits) == 64);
static_assert(offsetof(ShmSegment, buckets) == 64 + sizeof(ShmLimits));
static_assert(offsetof(ShmSegment, exited) == offsetof(ShmSegment, buckets) + 64 * kMaxRules);
static_assert(offsetof(ShmSegment, shares) == offsetof(ShmSegment, exited) + sizeof(ShmExited));
static_assert(offsetof(ShmSegment, wait_hist) == offsetof(ShmSegment, shares) + sizeof(ShmShares));
static_assert(offsetof(ShmSegment, fleet) == offsetof(ShmSegment, wait_hist) + sizeof(WaitHist));
static_assert(offsetof(ShmSegment, protect) == offsetof(ShmSegment, fleet) + sizeof(ShmFleet));
static_assert(offsetof(ShmSegment, slots) == offsetof(ShmSegment, protect) + sizeof(ShmProtect));
static_assert(sizeof(WaitHist) % 64 == 0);
static_assert(offsetof(ShmSegment, slot_ns) == offsetof(ShmSegment, slots) + kMaxSlots * sizeof(ShmSlot));
static_assert(sizeof(ShmSegment) == offsetof(ShmSegment, slot_ns) + sizeof(ShmSlotNs));
static_assert(sizeof(LimitSet) % 8 == 0, "the seqlock copies LimitSet in 64-bit words");
static_assert(sizeof(ShmSegment) == kShmBaseSize && shm_layout_fingerprint() == kShmBaseFingerprint,
              "the base is frozen (what 0.2.0's processes use): add a section instead (see the top of this file)");
static_assert(offsetof(ShmSegment, exited) + offsetof(ShmExited, notices) == 6868, "the notices word never moves");
static_assert(sizeof(ShmSectionEntry) == 24 && sizeof(ShmSectionDir) == 384 && kShmDirOffset % 64 == 0);

}  // namespace bonsai
