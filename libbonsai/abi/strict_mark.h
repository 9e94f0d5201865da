// SPDX-License-Identifier: MIT
// Strict mode's mark (docs/reference/supervised.md "Strict mode"): what bonsaictl's
// seccomp filter and the library agree on. `run --strict` draws one 32-bit mark per
// launch and hands it to the library in BONSAI_STRICT; the library makes its own data
// calls with the mark in the upper half of their first argument, which for every
// system call the filter checks is a descriptor (or an *at directory, a count) the
// kernel reads as a 32-bit int: the kernel ignores the upper half, the filter sees it.
// A call without the mark -- a raw `syscall` instruction, glibc's internal calls
// (stdio, POSIX AIO), a static, Go or 32-bit program -- goes to the supervisor.
// The mark is a number no ordinary register holds in its upper half: not 0 (a
// zero-extended int), not 0xffffffff (a sign-extended negative one), not a user-space
// pointer's (at most 0x7fff): bit 31 set and not all ones.
#pragma once
#include <cstdint>

namespace bonsai {

inline constexpr bool strict_mark_valid(uint32_t m) noexcept { return (m & 0x80000000u) && m != 0xffffffffu; }

// The first argument as the library passes it under mark `m` (the upper half replaced).
inline constexpr uint64_t strict_marked_arg(uint32_t m, uint64_t a0) noexcept {
  return (static_cast<uint64_t>(m) << 32) | (a0 & 0xffffffffu);
}

// BONSAI_STRICT's value: exactly 8 hex digits naming a valid mark. @return false otherwise.
inline bool strict_mark_parse(const char* s, uint32_t& out) noexcept {
  if (!s) return false;
  uint32_t v = 0;
  int n = 0;
  for (; s[n]; ++n) {
    char c = s[n];
    uint32_t d;
    if (c >= '0' && c <= '9') d = static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') d = static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') d = static_cast<uint32_t>(c - 'A' + 10);
    else return false;
    if (n >= 8) return false;
    v = v << 4 | d;
  }
  if (n != 8 || !strict_mark_valid(v)) return false;
  out = v;
  return true;
}

}  // namespace bonsai
