// SPDX-License-Identifier: MIT
// Compression's set-up and end (see compress_hooks.h): the configuration from the
// BONSAI_COMPRESS_* options, the switches the wrappers test, what a forked child
// forgets, the stats line at exit. Called from interpose/init.cc's constructor and
// destructor.
#include <cerrno>
#include <pthread.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"
#include "runtime/options.h"
#include "sys/startup.h"
#include "sys/atfork.h"

namespace bonsai::compress {

BONSAI_STARTUP_DATA constinit bool g_tx_on = false;  // read at every exit
BONSAI_STARTUP_DATA constinit bool g_rx_on = false;
BONSAI_STARTUP_DATA constinit bool g_on = false;
constinit CompressConfig g_cfg{};

namespace {

void after_fork_in_child() {
  fd_table_after_fork();
  pool_after_fork();
}

}  // namespace

BONSAI_STARTUP void hooks_init() noexcept {
  // Nothing to read (or touch) unless compression is asked for: every start runs this.
  auto set = [](bonsai::Opt o) { const char* v = bonsai::option_env(o); return v && *v; };
  if (!set(bonsai::Opt::compress_to) && !set(bonsai::Opt::compress_accept)) return;
  int saved = errno;
  if (config_from_env(g_cfg)) {
    // The descriptor table and the connection records are mapped as they are needed.
    stats_setup();
    pool_set_mem_cap(g_cfg.mem_cap);
    g_tx_on = g_cfg.nto > 0;
    g_rx_on = g_cfg.accept;
    g_on = true;
    at_fork_child(after_fork_in_child);
  }
  errno = saved;
}

BONSAI_STARTUP void hooks_at_exit() noexcept {
  if (g_tx_on) tx_drain_all();
  stats_at_exit();
}

}  // namespace bonsai::compress
