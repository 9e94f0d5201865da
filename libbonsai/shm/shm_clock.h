// SPDX-License-Identifier: MIT
// The clock of shared buckets. A service's buckets hold times (tat) that every
// attached process compares with its own CLOCK_MONOTONIC; a process in a time
// namespace (unshare --time --monotonic N) reads a clock N seconds off, which used
// to stall every other process of the service. Buckets therefore
// run on the host's CLOCK_MONOTONIC: each process subtracts its namespace's offset,
// read from /proc/self/timens_offsets (absent or unreadable: offset 0; the bucket's
// clamp, kMaxAheadNs in bucket/token_bucket.h, then still bounds the damage).
// Raw system calls, no allocation; async-signal-safe.
#pragma once
#include <cstdint>

namespace bonsai {

// Parses the text of /proc/PID/timens_offsets. @return the monotonic offset in ns
// (this namespace's clock minus the host's), 0 if the text has none or is malformed.
int64_t timens_mono_offset_parse(const char* text) noexcept;

// This process's monotonic offset (reads /proc/self/timens_offsets).
int64_t timens_mono_offset_read() noexcept;

}  // namespace bonsai
