// SPDX-License-Identifier: MIT
// The library's side of the host segment (abi/host_abi.h): mapped at set-up and, if it
// did not exist yet, again when the service's limits change (bonsaictl load makes it
// before it rewrites the services). Everything in it is checked before use; without a
// usable one every rule is held to its own rate (said once by the caller).
// Raw system calls, no allocation, no logging.
#pragma once
#include <cstddef>
#include <cstdint>

#include "abi/host_abi.h"

namespace bonsai {

// A ShmSlot::flags bit beside abi/shm_abi.h's kSlot*: the process has a rule with a ceil
// but no host segment to borrow from (a container's: its device does not mount the
// host segment, docs/reference/containers.md), so its rules run at their guaranteed rates.
// Shown by `stat`; said nowhere else, being the documented way of it.
inline constexpr uint32_t kSlotNoHost = 16;

// Maps /<prefix>bonsai-host.<uid> if it exists and is usable (owner, mode, size,
// header). Idempotent; safe to call again after a failure.
// @return true if mapped; false with `why` set (empty if it simply does not exist);
// `newer` (if given) true when the segment is of a layout newer than this build reads
// (said once per service: kNoticeNewerHost).
bool shm_host_attach(const char* prefix, char* why, size_t cap, bool* newer = nullptr) noexcept;

// The mapped host segment, or nullptr.
ShmHost* shm_host() noexcept;

// Capacity rule `host1 - 1`, read consistently under the seqlock (lock-free: a few
// loads). @return false if there is no such rule or a writer is busy.
bool shm_host_rule(uint8_t host1, Rule& out) noexcept;

// The whole capacity set (seqlock copy; set-up and install only).
bool shm_host_capacity(LimitSet& out) noexcept;

// The segment's name for `prefix` and `uid` (shared with bonsaictl).
size_t shm_host_path(char* buf, size_t cap, const char* prefix, unsigned uid) noexcept;

}  // namespace bonsai
