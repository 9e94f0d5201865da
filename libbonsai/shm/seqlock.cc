// SPDX-License-Identifier: MIT
// Seqlock over ShmLimits::set (see seqlock.h). The data is copied in 64-bit words
// with atomics, so readers racing a writer are well defined (and TSan-clean). No
// standalone fences: each word is stored with release (so a reader that sees it also
// sees the odd sequence before it) and loaded with acquire (so the reader's second
// look at the sequence comes after the words). On x86 both are plain moves.
#include "shm/seqlock.h"

#include <ctime>

#include "sys/clock.h"
#include "sys/futex.h"

namespace bonsai {
namespace {

constexpr size_t kWords = sizeof(LimitSet) / 8;

void copy_out(const LimitSet& src, LimitSet& dst) {
  auto* s = reinterpret_cast<const uint64_t*>(&src);
  auto* d = reinterpret_cast<uint64_t*>(&dst);
  for (size_t i = 0; i < kWords; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_ACQUIRE);
}

void copy_in(const LimitSet& src, LimitSet& dst) {
  auto* s = reinterpret_cast<const uint64_t*>(&src);
  auto* d = reinterpret_cast<uint64_t*>(&dst);
  for (size_t i = 0; i < kWords; ++i) __atomic_store_n(&d[i], s[i], __ATOMIC_RELEASE);
}

void nap_100us() {
  timespec ts{0, 100'000};
  nanosleep(&ts, nullptr);
}

}  // namespace

bool seqlock_read(const ShmLimits& l, LimitSet& out, uint64_t& seq, int tries) noexcept {
  for (int i = 0; i < tries; ++i) {
    uint64_t s1 = l.seq.load(std::memory_order_acquire);
    if (s1 & 1) continue;
    copy_out(l.set, out);
    if (l.seq.load(std::memory_order_relaxed) == s1) {
      seq = s1;
      return true;
    }
  }
  return false;
}

uint64_t seqlock_write(ShmLimits& l, const LimitSet& set, uint64_t now_unix_ns, uint64_t takeover_ns) noexcept {
  uint64_t s = l.seq.load(std::memory_order_acquire);
  uint64_t odd_since = 0, odd_seen = 0;
  for (;;) {
    if (!(s & 1)) {
      if (l.seq.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) {
        ++s;
        break;
      }
      continue;
    }
    uint64_t now = mono_ns();
    if (s != odd_seen) odd_seen = s, odd_since = now;
    if (now - odd_since > takeover_ns && l.seq.compare_exchange_strong(s, s + 2, std::memory_order_acq_rel)) {
      s += 2;  // still odd: ours now
      break;
    }
    nap_100us();
    s = l.seq.load(std::memory_order_acquire);
  }
  copy_in(set, l.set);
  l.changed_unix_ns.store(now_unix_ns, std::memory_order_relaxed);
  l.seq.store(s + 1, std::memory_order_release);
  futex_wake_all(futex_low_word(&l.seq));  // threads asleep in a wait go on under the new limits
  return s + 1;
}

}  // namespace bonsai
