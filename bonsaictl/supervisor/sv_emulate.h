// SPDX-License-Identifier: MIT
// Calls whose size the supervisor learns only afterwards (zero-copy calls, reads), made
// by many threads at once: each reserves its units before it goes, so concurrent calls
// queue behind each other in the bucket instead of all going before any is charged.
// A zero-copy call (sendfile, splice, copy_file_range) whose ends cannot make it wait
// is made by the supervisor itself on copies of the target's descriptors, cut to what
// it reserved (one chunk): it returns a short count, which every caller loops on (Go,
// cp, nginx), so no call moves more than was reserved. See docs/reference/supervised.md
// "Supervised programs".
#pragma once
#include <cstdint>
#include <linux/types.h>
#include <sys/types.h>

#include "bucket/token_bucket.h"
#include "supervisor/sv_syscalls.h"

namespace bonsai::ctl {

// The most one reservation takes, and one emulated call moves, at high rates (a chunk
// is ~8 ms of rate: 8 MiB at 1 GiB/s would be made in the supervisor's thread).
inline constexpr uint64_t kSvReserveMax = 1u << 20;

// Bytes a call asking `asked` (UINT64_MAX: unknown) reserves before it goes, charged to
// byte buckets `a` and `b` (either may be null or a call-rate bucket, which a call
// pays one unit whatever its size): at most one chunk of the smaller byte bucket and
// kSvReserveMax. 0 when no byte bucket applies (nothing to reserve) or it asks 0.
inline uint64_t sv_reserve_bytes(uint64_t asked, const BucketParams* a, const BucketParams* b) noexcept {
  uint64_t bound = UINT64_MAX;
  for (const BucketParams* p : {a, b})
    if (p && !p->per_call && p->chunk > 0 && static_cast<uint64_t>(p->chunk) < bound) bound = static_cast<uint64_t>(p->chunk);
  if (bound == UINT64_MAX) return 0;
  if (bound > kSvReserveMax) bound = kSvReserveMax;
  return asked < bound ? asked : bound;
}

// The smallest share a reservation is cut to when many calls wait (sv_reserve_share).
inline constexpr uint64_t kSvReserveFloor = 4096;

// A reservation when `waiting` reserved calls are held already: the calls queue in the
// bucket in the order they reserved, so a new call (a small request's) waits for all
// their reservations; each takes its share of one chunk, never below kSvReserveFloor,
// so the queue stays about one chunk deep (40 threads in 4 MiB sendfiles at 5 MB/s:
// 40 x 39 KB = 0.31 s of queue; shared, ~33 ms).
inline uint64_t sv_reserve_share(uint64_t reserve, uint64_t waiting) noexcept {
  uint64_t share = reserve / (waiting + 1);
  uint64_t floor = reserve < kSvReserveFloor ? reserve : kSvReserveFloor;
  return share > floor ? share : floor;
}

// What settling a reservation does to a byte bucket: the units given back (the call
// moved less than it reserved) or charged late (it moved more, which only a call the
// kernel made in full can: a read, a zero-copy call that was not emulated).
struct SvSettle {
  uint64_t give_back = 0;
  uint64_t charge_late = 0;
};
inline SvSettle sv_settle(uint64_t reserved, uint64_t moved) noexcept {
  if (moved < reserved) return {reserved - moved, 0};
  return {0, moved - reserved};
}

// Whether one end of a zero-copy call can never make it wait for room or data: a
// regular file or block device (its data is in memory or a disk's latency away), or a
// descriptor in non-blocking mode; a pipe too when splice is asked SPLICE_F_NONBLOCK.
// `mode`: st_mode of the end; `status_flags`: its F_GETFL.
bool sv_end_never_waits(mode_t mode, int status_flags, bool splice_nonblock) noexcept;

// A zero-copy call the supervisor makes itself: copies of the target's descriptors
// (pidfd_getfd: the same open file descriptions, so file positions and status flags
// are shared), the target's offset pointers, the count cut to the reservation.
struct SvEmu {
  int nr = -1;  // -1: not emulated (the call is let go with CONTINUE)
  int in_fd = -1, out_fd = -1;
  uint64_t off_in = 0, off_out = 0;  // addresses in the target (0: NULL, the file position)
  uint64_t count = 0;
  unsigned flags = 0;
};

// Prepares the emulation of system call `sc` (args `a`) of the process behind `pidfd`,
// moving at most `bound` bytes. @return false (nothing held open) when it cannot be
// emulated: not a zero-copy call, an end that could wait, a descriptor not copied.
bool sv_emu_prepare(const SvSyscall& sc, const __u64 a[6], int pidfd, uint64_t bound, SvEmu& e);

// Makes the call for thread `tid`: reads its offsets, calls, writes them back.
// @return bytes moved, or -errno as the call would have failed.
int64_t sv_emu_perform(const SvEmu& e, int tid);

// Closes the copies (idempotent).
void sv_emu_close(SvEmu& e);

}  // namespace bonsai::ctl
