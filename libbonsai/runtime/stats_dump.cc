// SPDX-License-Identifier: MIT
// Writing the per-process counters as JSON at exit (see stats_dump.h).
// No allocation: a static buffer, raw system calls.
#include "runtime/stats_dump.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "log/blog.h"
#include "log/out_file.h"
#include "runtime/limiter.h"
#include "sys/env.h"
#include "sys/raw_syscall.h"

namespace bonsai {
namespace {
constinit char g_stats_path[kOutPathMax] = {};
constinit char g_json[16384] = {};
}  // namespace

bool stats_path_from_env() noexcept {
  return out_path_copy("BONSAI_STATS", env_get("BONSAI_STATS"), g_stats_path);
}

size_t stats_format_json(const ProcessCounters& pc, int pid, char* buf, size_t cap) noexcept {
  size_t used = 0;
  auto put = [&](const char* fmt, auto... args) {
    if (used >= cap) return;
    int n = std::snprintf(buf + used, cap - used, fmt, args...);
    used = n < 0 ? cap : used + static_cast<size_t>(n);
  };
  put("{\"pid\":%d,\"calls\":{", pid);
  bool first = true;
  for (size_t i = 0; i < kCallCount; ++i) {
    CallTotals c = counters_total(pc, static_cast<CallId>(i));
    if (!c.calls) continue;
    std::string_view name = call_name(static_cast<CallId>(i));
    put("%s\"%.*s\":{\"calls\":%llu,\"bytes\":%llu,\"throttled\":%llu,\"wait_ns\":%llu", first ? "" : ",",
        static_cast<int>(name.size()), name.data(), static_cast<unsigned long long>(c.calls),
        static_cast<unsigned long long>(c.bytes), static_cast<unsigned long long>(c.throttled),
        static_cast<unsigned long long>(c.wait_ns));
    if (c.wire_bytes) put(",\"wire_bytes\":%llu", static_cast<unsigned long long>(c.wire_bytes));  // compressed sockets
    put("}");
    first = false;
  }
  put("}}");
  return used < cap ? used : 0;
}

void stats_dump_at_exit() noexcept {
  if (!g_stats_path[0] || !g_limiter.counters) return;
  int saved = errno;
  size_t len = stats_format_json(*g_limiter.counters, static_cast<int>(getpid()), g_json, sizeof g_json - 1);
  if (len) {
    g_json[len++] = '\n';
    out_file_append("BONSAI_STATS", g_stats_path, g_json, len);  // one write: lines never interleave
  }
  errno = saved;
}

}  // namespace bonsai
