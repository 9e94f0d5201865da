// SPDX-License-Identifier: MIT
// How much of a long sweep a build runs. A sanitized build (ASan+UBSan, TSan) pays 5-20x
// a round, and what it adds is the code paths reached, not the count: sweeps and
// size-scaled checks keep their shape there with fewer rounds (each kind of case still
// met), so `make test`'s two sanitized unit runs stay within its time budget.
#pragma once

namespace bonsai::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// @return n in a release build, n / div (at least 1) in a sanitized one.
constexpr int scaled(int n, int div = 4) { return kSanitized ? (n / div > 0 ? n / div : 1) : n; }

}  // namespace bonsai::test
