// SPDX-License-Identifier: MIT
// The edit (Levenshtein) distance behind every "did you mean": call names
// (abi/calls.h call_name_suggest) and bonsaictl's keys (bonsaictl/base/diag.h closest_word).
// No allocation.
#pragma once
#include <cstddef>
#include <string_view>

namespace bonsai {

inline constexpr size_t kEditDistanceMax = 64;  // longest string measured exactly

// Insertions, deletions and substitutions turning `a` into `b`. A string longer than
// kEditDistanceMax gives the longer length (at least the true distance's lower bound
// |len a - len b|, far above the 2 a hint allows when the other string is short).
size_t edit_distance(std::string_view a, std::string_view b) noexcept;

}  // namespace bonsai
