// SPDX-License-Identifier: MIT
// Segment names (see shm_name.h).
#include "shm/shm_name.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "abi/shm_abi.h"
#include "sys/str_build.h"

namespace bonsai {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

bool all_name_chars(std::string_view s) {
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

}  // namespace

bool shm_service_name_valid(std::string_view name) noexcept {
  if (name.empty() || name.size() > kServiceNameMax) return false;
  if (name[0] == '.' || name[0] == '-') return false;
  return all_name_chars(name);
}

bool shm_prefix_valid(std::string_view prefix) noexcept { return prefix.size() <= 64 && all_name_chars(prefix); }

size_t shm_segment_name(char* buf, size_t cap, std::string_view prefix, unsigned uid,
                        std::string_view service) noexcept {
  if (!shm_prefix_valid(prefix) || !shm_service_name_valid(service) || cap == 0) return 0;
  return StrBuild(buf, cap).put("/").put(prefix).put("bonsai.").put_uint(uid).put(".").put(service).done();
}

size_t shm_segment_path(char* buf, size_t cap, std::string_view prefix, unsigned uid,
                        std::string_view service) noexcept {
  // "/dev/shm" as one 8-byte immediate, not a constant in .rodata: every service
  // member's start builds this path, and a page of constants it touches nowhere else
  // would be a fault of its own (sys/startup.h).
  constexpr uint64_t kDir = 0x6d68732f7665642full;  // "/dev/shm", little-endian
  constexpr size_t kDirLen = 8;
  if (cap <= kDirLen) return 0;
  size_t n = shm_segment_name(buf + kDirLen, cap - kDirLen, prefix, uid, service);
  if (!n) return 0;
  std::memcpy(buf, &kDir, kDirLen);
  return n + kDirLen;
}

std::string_view shm_service_of_file(std::string_view file, std::string_view prefix, unsigned uid) noexcept {
  char head[128];
  int n = std::snprintf(head, sizeof head, "%.*sbonsai.%u.", static_cast<int>(prefix.size()), prefix.data(), uid);
  if (n < 0 || static_cast<size_t>(n) >= sizeof head) return {};
  std::string_view h(head, static_cast<size_t>(n));
  if (file.size() <= h.size() || file.substr(0, h.size()) != h) return {};
  std::string_view service = file.substr(h.size());
  return shm_service_name_valid(service) ? service : std::string_view{};
}

}  // namespace bonsai
