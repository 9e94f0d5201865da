// SPDX-License-Identifier: MIT
// Waiting until an absolute CLOCK_MONOTONIC deadline, as the paper does: short waits
// busy-wait, long ones sleep. Absolute deadlines mean a signal or a late wake-up
// neither loses nor adds time. No locks are held while waiting. errno is preserved.
#pragma once
#include <cstdint>

namespace bonsai {

// Waits until `deadline_ns`. Remaining waits below `spin_ns` busy-wait.
// If `cancellable`, the sleep is a pthread cancellation point (use it only for
// wrappers of calls that are cancellation points themselves); otherwise it is not.
// Cost: none when the deadline has passed; else one sleep (EINTR resumes it).
void wait_until(uint64_t deadline_ns, uint64_t spin_ns, bool cancellable) noexcept;

}  // namespace bonsai
