// SPDX-License-Identifier: MIT
// Compression's set-up and end (see compress_hooks.h): the configuration from the
// BONSAI_COMPRESS_* options, the switches the wrappers test, what a forked child
// forgets, the stats line at exit. Called from interpose/init.cc's constructor and
// destructor.
#include <cerrno>
#include <pthread.h>

#include "interpose/compressed/compress_glue.h"
#include "interpose/compressed/compress_hooks.h"

namespace bonsai::compress {

constinit bool g_tx_on = false;
constinit bool g_rx_on = false;
constinit bool g_on = false;
constinit CompressConfig g_cfg{};

namespace {

void after_fork_in_child() {
  fd_table_after_fork();
  pool_after_fork();
}

}  // namespace

void hooks_init() noexcept {
  int saved = errno;
  if (config_from_env(g_cfg)) {
    // The descriptor table and the connection records are mapped as they are needed.
    stats_setup();
    pool_set_mem_cap(g_cfg.mem_cap);
    g_tx_on = g_cfg.nto > 0;
    g_rx_on = g_cfg.accept;
    g_on = true;
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
  }
  errno = saved;
}

void hooks_at_exit() noexcept {
  if (g_tx_on) tx_drain_all();
  stats_at_exit();
}

}  // namespace bonsai::compress
