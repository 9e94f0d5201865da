// SPDX-License-Identifier: MIT
// BONSAI_STATS=FILE: at exit, each process appends one JSON line with its counters
// per call name (calls, bytes, throttled, wait_ns; wire_bytes where non-zero). "%p" in
// FILE becomes the pid.
#pragma once
#include <cstddef>

#include "abi/counters_abi.h"

namespace bonsai {

// Remembers the BONSAI_STATS path (constructor time: some workers lose the
// environment). @return true if stats are to be written.
bool stats_path_from_env() noexcept;

// Formats `pc` as one JSON object (no newline) into `buf`.
// @return length written, or 0 if `cap` was too small.
size_t stats_format_json(const ProcessCounters& pc, int pid, char* buf, size_t cap) noexcept;

}  // namespace bonsai
