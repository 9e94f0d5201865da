// SPDX-License-Identifier: MIT
// Joining a service's running supervisor (issue 49, item 9; docs/limits.md "Process
// trees"): what bonsaictl's supervisor and the library agree on. A supervisor started
// for a service's static or Go child (`bonsaictl sv-exec`) listens on an abstract unix
// socket named after the service's segment. A service process about to execute another
// static program connects to it, checks that its peer runs as its own user (or root),
// receives the seccomp filter the supervisor built for the limits in force (classic
// BPF, a header and its instructions in one message), loads it with a new listener,
// sends the listener (and its stderr) back with SCM_RIGHTS and executes the program
// itself: no exec of bonsaictl, no fork, no libseccomp in the child (~0.1 ms against
// ~8.5 ms). When no supervisor answers, the trampoline starts one as before.
// Header-only, no allocation: the library uses it after fork().
#pragma once
#include <cstddef>
#include <cstdint>

namespace bonsai {

inline constexpr uint32_t kSvJoinMagic = 0x314a5642;  // "BVJ1": a change of this protocol changes it
inline constexpr uint32_t kSvJoinMaxInsns = 512;      // the child keeps the filter on its stack

struct SvJoinHeader {
  uint32_t magic;
  uint32_t insns;  // struct sock_filter entries that follow (8 bytes each)
};

// The socket's abstract name (without the leading NUL): "bonsai-sv." PREFIX UID "." SERVICE.
// @return its length, 0 if it does not fit `cap` (no socket then: the trampoline's way).
inline size_t sv_join_name(char* out, size_t cap, const char* prefix, unsigned uid, const char* service) noexcept {
  size_t n = 0;
  auto put = [&](const char* s) {
    for (; s && *s; ++s) {
      if (n >= cap) return false;
      out[n++] = *s;
    }
    return true;
  };
  char digits[16];
  size_t d = 0;
  do digits[d++] = static_cast<char>('0' + uid % 10); while ((uid /= 10) && d < sizeof digits);
  char num[17];
  for (size_t i = 0; i < d; ++i) num[i] = digits[d - 1 - i];
  num[d] = '\0';
  if (!put("bonsai-sv.") || !put(prefix) || !put(num) || !put(".") || !put(service)) return 0;
  return service && *service ? n : 0;
}

}  // namespace bonsai
