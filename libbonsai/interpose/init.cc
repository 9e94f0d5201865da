// SPDX-License-Identifier: MIT
// The library's one constructor and destructor, and the order of set-up: the objects
// glibc's functions are looked up in (sys/next_symbol.h: lock-free lookups on
// first use; only if they cannot be noted, the few needed where dlsym must not run are
// resolved now, interpose/real.h BONSAI_REAL_EAGER), the limiter (runtime/limiter_setup.h; it also runs lazily from
// the first wrapper call: another library's constructor may call write() before ours
// runs), then compression (interpose/compressed/compress_hooks.h). The environment is read here
// because some workers (nginx) lose theirs later. Every exec of a service pays for
// what runs here (bench/scenarios/startup.sh): work for a setting only when it is set.
#include <unistd.h>

#include <atomic>

#include "interpose/compressed/compress_hooks.h"
#include "sys/next_symbol.h"
#include "interpose/real.h"
#include "interpose/strict_calls.h"
#include "interpose/process_exit.h"
#include "runtime/stats_dump.h"
#include "runtime/limiter_setup.h"
#include "runtime/limiter_state.h"
#include "runtime/options.h"
#include "shm/shm_attach.h"
#include "sys/startup.h"
#include "sys/raw_syscall.h"

namespace {

__attribute__((constructor(101))) void bonsai_constructor() {
  // Lock-free lookups: every function resolves on first use, wherever that is. Else the
  // few that must not meet dlsym's lock are resolved now.
  bool lock_free = bonsai::next_objects_note();
  if (!lock_free) bonsai::real::resolve_eager();
  bonsai::limiter_init_once();
  bonsai::strict::setup();  // run --strict: the data calls marked (after the segment is attached)
  bonsai::compress::hooks_init();
  // Compression calls glibc under its connection locks: no dlsym there (real.h).
  auto set = [](bonsai::Opt o) { const char* v = bonsai::option_env(o); return v && *v; };
  if (!lock_free && (set(bonsai::Opt::compress_to) || set(bonsai::Opt::compress_accept))) bonsai::real::resolve_all();
}

// At exit: the limiter's hooks (also run by _exit(), interpose/exit_calls.cc), then
// compression's stats line (a normal exit only).
__attribute__((destructor)) void bonsai_destructor() {
  bonsai::process_exit_hooks();
  bonsai::compress::hooks_at_exit();
}

}  // namespace

namespace bonsai {

// At exit (a destructor, or _exit()): the stats line, then the service slot is given
// back with its counts folded into the service's totals (counting stops first, so
// none is lost or doubled). Runs once.
BONSAI_STARTUP void process_exit_hooks() noexcept {
  // A vfork()ed child shares our memory: it must neither dump nor give back the
  // parent's slot, nor mark the hooks as done for the parent.
  if (g_limiter.state.load() != kActive || g_limiter.pid.load() != raw_getpid()) return;
  BONSAI_STARTUP_DATA static constinit std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  stats_dump_at_exit();
  if (shm_attached()) {
    g_limiter.counters = nullptr;
    shm_release_at_exit();
  }
}

}  // namespace bonsai
