// SPDX-License-Identifier: MIT
// Bounded stderr logger (see blog.h).
#include "log/blog.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {
namespace {
constinit std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};
constinit std::atomic<int> g_printed{0};
constexpr int kMaxMessages = 100;  // a broken setup must not flood the host's stderr
}  // namespace

void blog_unknown_level(const char* text) noexcept;

BONSAI_STARTUP void blog_set_level(const char* text) noexcept {
  if (!text) return;
  static constexpr struct { const char* name; LogLevel level; } kNames[] = {
      {"off", LogLevel::Off}, {"error", LogLevel::Error}, {"warn", LogLevel::Warn},
      {"info", LogLevel::Info}, {"debug", LogLevel::Debug}};
  for (const auto& n : kNames)
    if (std::strcmp(text, n.name) == 0) return g_level.store(static_cast<int>(n.level));
  // Taken silently, a typo ("debgu") would look like a quiet library.
  if (*text) blog_unknown_level(text);
}

// Out of the start-up section: runs only when BONSAI_LOG is misspelt.
void blog_unknown_level(const char* text) noexcept {
  blog(LogLevel::Warn, "BONSAI_LOG='%.32s%s' is not a level (off, error, warn, info, debug): using warn", text,
       std::strlen(text) > 32 ? "..." : "");
}

bool blog_enabled(LogLevel level) noexcept {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void blog(LogLevel level, const char* fmt, ...) noexcept {
  if (!blog_enabled(level) || level == LogLevel::Off) return;
  if (g_printed.fetch_add(1, std::memory_order_relaxed) >= kMaxMessages) return;
  int saved = errno;
  char buf[512];
  int used = std::snprintf(buf, sizeof buf, "bonsai[%d]: ", static_cast<int>(getpid()));
  if (used < 0) used = 0;
  va_list ap;
  va_start(ap, fmt);
  int more = std::vsnprintf(buf + used, sizeof buf - static_cast<size_t>(used), fmt, ap);
  va_end(ap);
  size_t len = static_cast<size_t>(used) + (more > 0 ? static_cast<size_t>(more) : 0);
  if (len > sizeof buf - 2) len = sizeof buf - 2;
  buf[len++] = '\n';
  raw_write(2, buf, len);
  errno = saved;
}

}  // namespace bonsai
