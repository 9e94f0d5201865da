// SPDX-License-Identifier: MIT
// CLOCK_MONOTONIC in nanoseconds (vDSO, ~30 ns). Async-signal-safe.
#pragma once
#include <cstdint>
#include <ctime>

namespace bonsai {

inline uint64_t mono_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace bonsai
