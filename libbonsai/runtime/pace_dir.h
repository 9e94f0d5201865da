// SPDX-License-Identifier: MIT
// What pacing (runtime/pace.h) and its per-descriptor table (runtime/pace_slots.h) both
// name: a call's direction on its descriptor, and how many descriptors have a pace slot.
// A header of its own so that the table does not include the pacing it serves.
#pragma once

namespace bonsai {

enum PaceDir : unsigned { kPaceRead = 0, kPaceWrite = 1 };

// Descriptors below this have a pace slot (others wait as blocking ones, said once).
inline constexpr int kPaceFds = 65536;

}  // namespace bonsai
