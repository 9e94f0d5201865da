// SPDX-License-Identifier: MIT
// 128-by-64-bit division without libgcc's __udivti3. The compiler calls that
// helper for any `unsigned __int128 / x`; the linker puts it at the far end of the
// library's 1 MiB of code, so the first rate computed at start-up (bucket_params for
// BONSAI_LIMITS or a service's limits) cost every exec one more page fault, ~5 us on a
// virtual machine. One `div` instruction does it when the quotient fits in 64 bits,
// which the callers check first (the instruction traps otherwise).
#pragma once

#include <cstdint>

namespace bonsai {

// q = (hi:lo) / d; false (q untouched) when d is 0 or the quotient needs more than 64 bits.
inline bool div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t& q) noexcept {
  if (d == 0 || hi >= d) return false;
#if defined(__x86_64__)
  uint64_t rem;
  __asm__("divq %[d]" : "=a"(q), "=d"(rem) : "a"(lo), "d"(hi), [d] "rm"(d) : "cc");
#else
  q = static_cast<uint64_t>(((static_cast<unsigned __int128>(hi) << 64) | lo) / d);
#endif
  return true;
}

// a * b / c rounded down, UINT64_MAX when it does not fit (or c is 0).
inline uint64_t mul_div_sat(uint64_t a, uint64_t b, uint64_t c) noexcept {
  unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  uint64_t q;
  return div128(static_cast<uint64_t>(p >> 64), static_cast<uint64_t>(p), c, q) ? q : UINT64_MAX;
}

}  // namespace bonsai
