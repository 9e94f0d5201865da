// SPDX-License-Identifier: MIT
// Trust checks on a mapped segment: the library runs unlimited rather than act on a
// segment that is not exactly what this build expects. Shared with bonsaictl.
// No allocation, no syscalls.
#pragma once
#include <cstddef>

#include "abi/shm_abi.h"

namespace bonsai {

// Checks magic, version, sizes, fingerprint and scope of a segment whose file
// is `file_size` bytes. @return nullptr if usable, else why not (a static string).
const char* shm_header_problem(const ShmSegment& seg, size_t file_size) noexcept;

// Checks a LimitSet read from a segment: rule count, rates, units, fd masks, known
// calls, byte rates only on data calls, no call in two buckets.
// @return nullptr if usable, else why not.
const char* limits_problem(const LimitSet& set) noexcept;

// Fills a fresh segment's header and limits (bonsaictl, when it creates one).
void shm_header_init(ShmSegment& seg, ShmScope scope, unsigned uid, const char* service,
                     uint64_t now_unix_ns) noexcept;

}  // namespace bonsai
