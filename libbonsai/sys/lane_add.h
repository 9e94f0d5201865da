// SPDX-License-Identifier: MIT
// One-instruction add to memory without a lock prefix: safe against a signal
// handler on the same thread (an interrupt lands between instructions), not against
// another CPU. For memory only one thread writes: its counter lane, its credit.
// Cost: ~1 ns, against ~8 ns for a locked atomic add on this machine kind.
#pragma once
#include <cstdint>

namespace bonsai {

inline void lane_add(uint64_t& slot, uint64_t v) noexcept {
#if defined(__x86_64__)
  asm volatile("addq %1, %0" : "+m"(slot) : "er"(v));
#else
  __atomic_store_n(&slot, __atomic_load_n(&slot, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
#endif
}

inline void lane_add(int64_t& slot, int64_t v) noexcept {
  lane_add(reinterpret_cast<uint64_t&>(slot), static_cast<uint64_t>(v));
}

inline uint64_t lane_load(const uint64_t& slot) noexcept { return __atomic_load_n(&slot, __ATOMIC_RELAXED); }

}  // namespace bonsai
