// SPDX-License-Identifier: MIT
// A 64-bit sequence word in shared memory as a futex: waiters sleep on its low 32 bits
// until a writer in any process changes it and wakes them (runtime/wait.cc sleeps on
// the limits' seq; shm/seqlock.cc wakes it after every write). Shared (not private)
// futexes: the word lives in a MAP_SHARED segment. errno may change: callers save it.
#pragma once
#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace bonsai {

// The low half of a 64-bit atomic: what a futex compares and sleeps on.
inline const uint32_t* futex_low_word(const std::atomic<uint64_t>* a) noexcept {
  static_assert(sizeof(std::atomic<uint64_t>) == 8);
  const auto* p = reinterpret_cast<const uint32_t*>(a);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return p + 1;
#else
  return p;
#endif
}

// Sleeps while *word == expected, until the absolute CLOCK_MONOTONIC time `until` (the
// kernel converts it from a time namespace) or a wake. Returns at once if the word
// differs, on a signal, or on EFAULT (a segment truncated under us).
inline void futex_wait_until(const uint32_t* word, uint32_t expected, const timespec* until) noexcept {
  ::syscall(SYS_futex, word, FUTEX_WAIT_BITSET, expected, until, nullptr, FUTEX_BITSET_MATCH_ANY);
}

// Wakes every waiter on `word`, in any process.
inline void futex_wake_all(const uint32_t* word) noexcept {
  ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace bonsai
