// SPDX-License-Identifier: MIT
// The library's logger: bounded (512-byte stack buffer), allocation-free, prefixed
// "bonsai: ", to stderr with one raw write. Never called on the fast path.
// Level from BONSAI_LOG=off|error|warn|info|debug (default warn).
#pragma once
#include <atomic>
#include <string_view>

namespace bonsai {

enum class LogLevel : int { Off = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Sets the level from the BONSAI_LOG value; unknown text keeps `warn` and says so (once:
// the level is set once per process).
void blog_set_level(const char* text) noexcept;
bool blog_enabled(LogLevel level) noexcept;

// printf-style message at `level`, prefixed with "bonsai[PID]: ".
void blog(LogLevel level, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

// Like blog(), but prints only the first time `once` is seen unset.
#define BONSAI_LOG_ONCE(level, ...)                                            \
  do {                                                                         \
    static std::atomic<bool> bonsai_once_{false};                              \
    if (!bonsai_once_.exchange(true, std::memory_order_relaxed))               \
      ::bonsai::blog(level, __VA_ARGS__);                                      \
  } while (0)

}  // namespace bonsai
