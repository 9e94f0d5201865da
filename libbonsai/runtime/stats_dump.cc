// SPDX-License-Identifier: MIT
// Writing JSON lines at exit, and the per-process counters as one (see stats_dump.h).
// No allocation: a static buffer, raw system calls.
#include "runtime/stats_dump.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include "log/blog.h"
#include "log/out_file.h"
#include "runtime/limiter_state.h"
#include "sys/env.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {
namespace {
constinit ExitLine g_stats{Opt::stats, {}};
constinit char g_json[16384] = {};
}  // namespace

BONSAI_STARTUP bool exit_line_setup(ExitLine& line) noexcept {
  return out_path_copy(option_row(line.opt).name, option_env(line.opt), line.path);
}

void exit_line_write(const ExitLine& line, char* json, size_t len) noexcept {
  if (!line.path[0] || !len) return;
  int saved = errno;
  json[len++] = '\n';
  out_file_append(option_row(line.opt).name, line.path, json, len);  // one write: lines never interleave
  errno = saved;
}

BONSAI_STARTUP bool stats_path_from_env() noexcept { return exit_line_setup(g_stats); }

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
    if (c.refused || c.shortened || c.held_ns)  // non-blocking descriptors (runtime/pace.h)
      put(",\"refused\":%llu,\"shortened\":%llu,\"held_ns\":%llu", static_cast<unsigned long long>(c.refused),
          static_cast<unsigned long long>(c.shortened), static_cast<unsigned long long>(c.held_ns));
    put("}");
    first = false;
  }
  put("}}");
  return used < cap ? used : 0;
}

BONSAI_STARTUP void stats_dump_at_exit() noexcept {
  if (!g_stats.path[0] || !g_limiter.counters) return;
  int saved = errno;
  size_t len = stats_format_json(*g_limiter.counters, static_cast<int>(getpid()), g_json, sizeof g_json - 1);
  errno = saved;
  exit_line_write(g_stats, g_json, len);
}

}  // namespace bonsai
