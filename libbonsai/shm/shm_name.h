// SPDX-License-Identifier: MIT
// Names of service segments: "/<prefix>bonsai.<uid>.<service>" (shm_open style; the
// file is /dev/shm/<prefix>bonsai.<uid>.<service>). Shared by libbonsai and bonsaictl.
// No allocation, no syscalls.
#pragma once
#include <cstddef>
#include <string_view>

namespace bonsai {

// A service name is 1..63 of [A-Za-z0-9_.-], not starting with '.' or '-'.
bool shm_service_name_valid(std::string_view name) noexcept;

// A prefix is 0..64 of [A-Za-z0-9_.-] (no '/').
bool shm_prefix_valid(std::string_view prefix) noexcept;

// Writes "/<prefix>bonsai.<uid>.<service>" into `buf`.
// @return its length, or 0 if a part is invalid or `cap` too small.
size_t shm_segment_name(char* buf, size_t cap, std::string_view prefix, unsigned uid,
                        std::string_view service) noexcept;

// Writes "/dev/shm" + name into `buf`. @return its length or 0.
size_t shm_segment_path(char* buf, size_t cap, std::string_view prefix, unsigned uid,
                        std::string_view service) noexcept;

// If the file name `file` (no directory) is a segment of `uid` under `prefix`,
// @return the service name inside it; else an empty view.
std::string_view shm_service_of_file(std::string_view file, std::string_view prefix, unsigned uid) noexcept;

}  // namespace bonsai
