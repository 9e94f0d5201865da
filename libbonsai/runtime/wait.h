// SPDX-License-Identifier: MIT
// Waiting until an absolute CLOCK_MONOTONIC deadline, as the paper does: short waits
// busy-wait, long ones sleep. Absolute deadlines mean a signal or a late wake-up
// neither loses nor adds time. No locks are held while waiting. errno is preserved.
#pragma once
#include <atomic>
#include <cstdint>

namespace bonsai {

// Waits until `deadline_ns`. Remaining waits below `spin_ns` busy-wait.
// If `cancellable`, the sleep is a pthread cancellation point (use it only for
// wrappers of calls that are cancellation points themselves); otherwise it is not.
// If `watch` is set, sleeps on it as a futex and returns early once *watch differs
// from `seen` (the limits changed: the caller goes on under the new ones); the writer
// wakes the sleepers, and a writer that does not (an older bonsaictl) is seen within
// kWatchSliceNs. Cost: none when the deadline has passed; else one sleep per wait.
void wait_until(uint64_t deadline_ns, uint64_t spin_ns, bool cancellable,
                const std::atomic<uint64_t>* watch = nullptr, uint64_t seen = 0) noexcept;

inline constexpr uint64_t kWatchSliceNs = 200'000'000;  // unwoken, a change lands within 200 ms

}  // namespace bonsai
