// SPDX-License-Identifier: MIT
// Environment lookup usable before libc's `environ` exists (see env.h).
#include "sys/env.h"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {
namespace {

constinit char g_snapshot[65536] = {};
constinit long g_snapshot_len = -1;  // -1: not read yet

void snapshot_read() {
  g_snapshot_len = 0;
  long fd = raw_syscall3(SYS_open, reinterpret_cast<long>("/proc/self/environ"), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return;
  long used = 0;
  while (used < static_cast<long>(sizeof g_snapshot) - 1) {
    long n = raw_syscall3(SYS_read, fd, reinterpret_cast<long>(g_snapshot + used),
                          static_cast<long>(sizeof g_snapshot) - 1 - used);
    if (n <= 0) break;
    used += n;
  }
  raw_syscall3(SYS_close, fd, 0, 0);
  g_snapshot[used] = '\0';
  g_snapshot_len = used;
}

}  // namespace

BONSAI_STARTUP const char* env_get(const char* name) noexcept {
  if (environ) return std::getenv(name);
  if (g_snapshot_len < 0) snapshot_read();
  size_t len = std::strlen(name);
  for (long i = 0; i < g_snapshot_len;) {
    const char* entry = g_snapshot + i;
    size_t entry_len = std::strlen(entry);
    if (entry_len > len && std::strncmp(entry, name, len) == 0 && entry[len] == '=') return entry + len + 1;
    i += static_cast<long>(entry_len) + 1;
  }
  return nullptr;
}

BONSAI_STARTUP const char* env_get_bonsai(const char* name) noexcept {
  if (!environ) return env_get(name);
  // Compared byte by byte against immediates: no string constant (.rodata) is read,
  // and neither `name` nor libc's getenv, unless some BONSAI_* variable is set.
  for (char** e = environ; *e; ++e) {
    if (env_is_bonsai(*e)) return std::getenv(name);
  }
  return nullptr;
}

BONSAI_STARTUP void env_each(void (*fn)(const char* entry, void* ctx), void* ctx) noexcept {
  if (environ) {
    for (char** e = environ; *e; ++e) fn(*e, ctx);
    return;
  }
  if (g_snapshot_len < 0) snapshot_read();
  for (long i = 0; i < g_snapshot_len;) {
    const char* entry = g_snapshot + i;
    fn(entry, ctx);
    i += static_cast<long>(std::strlen(entry)) + 1;
  }
}

}  // namespace bonsai
