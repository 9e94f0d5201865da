// SPDX-License-Identifier: MIT
// The seqlock around a segment's limits: one writer at a time (bonsaictl), any number
// of lock-free readers (every attached process, on its next call after a change).
// No allocation, no syscalls on the read side.
#pragma once
#include <cstdint>

#include "abi/shm_abi.h"

namespace bonsai {

// Copies the limits out of `l` if no writer is active and none finished meanwhile.
// Tries at most `tries` times. @return true with `out` and `seq` (the even sequence
// the copy belongs to) set; false if a writer kept it busy (try again later).
bool seqlock_read(const ShmLimits& l, LimitSet& out, uint64_t& seq, int tries) noexcept;

// Publishes `set` (and `now_unix_ns` as the change time). Waits for another writer;
// one that held the lock for longer than `takeover_ns` is presumed dead and its
// lock taken over (a crashed bonsaictl must not freeze the service's limits).
// @return the new (even) sequence number.
uint64_t seqlock_write(ShmLimits& l, const LimitSet& set, uint64_t now_unix_ns,
                       uint64_t takeover_ns = 200'000'000) noexcept;

}  // namespace bonsai
