// SPDX-License-Identifier: MIT
// The compression stats line at exit (BONSAI_COMPRESS_STATS, docs/reference/compression.md):
// application and wire bytes each way, frames per method, chunks per level, the
// workspaces' peak memory and refusals; also said on stderr at info level. Written by
// runtime/stats_dump.h's one at-exit writer.
#include <cstdio>
#include <unistd.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"
#include "log/blog.h"
#include "runtime/stats_dump.h"
#include "sys/startup.h"

namespace bonsai::compress {
namespace {
// Copied at start-up (nginx rewrites its environment). Zero-initialised (.bss; its
// option is set by stats_setup, the only way to a line): with a non-zero initialiser
// its 1 KiB pushed .data onto a second page, one more page fault at every start.
constinit ExitLine g_stats_line{};
}  // namespace

void stats_setup() noexcept {
  g_stats_line.opt = Opt::compress_stats;
  exit_line_setup(g_stats_line);
}

BONSAI_STARTUP void stats_at_exit() noexcept {
  if (!g_on) return;
  ConnTotals t;
  pool_totals(t);
  char buf[640];
  int n = std::snprintf(buf, sizeof buf,
                        "{\"pid\":%d,\"tx_app_bytes\":%llu,\"tx_wire_bytes\":%llu,\"rx_app_bytes\":%llu,"
                        "\"rx_wire_bytes\":%llu,\"frames\":{\"raw\":%llu,\"lz4\":%llu,\"zstd\":%llu},\"level_chunks\":[",
                        static_cast<int>(getpid()), (unsigned long long)t.tx_app, (unsigned long long)t.tx_wire,
                        (unsigned long long)t.rx_app, (unsigned long long)t.rx_wire, (unsigned long long)t.frames[0],
                        (unsigned long long)t.frames[1], (unsigned long long)t.frames[2]);
  for (unsigned i = 0; i < g_cfg.levels.count && n > 0 && n < 480; ++i)
    n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "%s%llu", i ? "," : "",
                       (unsigned long long)t.level_chunks[i]);
  if (n <= 0 || n > 500) return;
  // The workspaces' memory: the most mapped at once (to size BONSAI_COMPRESS_MEM_MIB)
  // and how many were refused (connections sent plain, 2 MiB frames, or reset).
  n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), "],\"mem_peak_bytes\":%llu,\"mem_refused\":%llu}",
                     (unsigned long long)pool_mem_peak(), (unsigned long long)pool_mem_refused());
  if (n <= 0 || static_cast<size_t>(n) >= sizeof buf) return;
  blog(LogLevel::Info, "compression: tx %llu app -> %llu wire bytes, rx %llu wire -> %llu app bytes",
       (unsigned long long)t.tx_app, (unsigned long long)t.tx_wire, (unsigned long long)t.rx_wire,
       (unsigned long long)t.rx_app);
  exit_line_write(g_stats_line, buf, static_cast<size_t>(n));
}

}  // namespace bonsai::compress
