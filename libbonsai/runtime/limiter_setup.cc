// SPDX-License-Identifier: MIT
// The limiter's process set-up (see limiter_setup.h): once per process, from its
// environment (BONSAI_LIMITS, BONSAI_STATS, ...) or its service's segment
// (BONSAI_SERVICE, watched for live changes), and again in a forked child. Every
// function here runs at every start or fork of a limited program: BONSAI_STARTUP
// (sys/startup.h) keeps them on the start-up pages (`make test-symbols`,
// tests/integration/t_startup_pages.sh). Runs inside the host process: no
// allocation, no locks, no exceptions; on anything unexpected it runs unlimited and
// says so once.
#include "runtime/limiter_setup.h"

#include <cerrno>

#include "abi/limit_parse.h"
#include "log/blog.h"
#include "runtime/exec_env.h"
#include "runtime/fleet_lapse.h"
#include "runtime/limiter_install.h"
#include "runtime/limiter_local.h"
#include "runtime/limiter_state.h"
#include "runtime/protect_time.h"
#include "runtime/stats_dump.h"
#include "runtime/uring_guard.h"
#include "runtime/view_ring.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"
#include "shm/shm_host.h"
#include "shm/shm_slots.h"
#include "sys/atfork.h"
#include "sys/raw_syscall.h"
#include "sys/startup.h"

namespace bonsai {
namespace {

BONSAI_STARTUP void after_fork_in_child() {
  // Attached to a service: the child counts in a slot of its own (the parent's slot
  // must keep the parent's counts); else its inherited counters start from zero.
  g_limiter.counters = shm_fork_counters(g_limiter.counters, &g_local_counters);
  if (g_limiter.counters) counters_reset(*g_limiter.counters);
  g_lanes_used.store(0, std::memory_order_relaxed);
  t_thread.lane_plus1 = 0;  // the only thread: takes lane 1 again
  g_limiter.pid.store(raw_getpid(), std::memory_order_relaxed);
  limiter_update_fast_view();
}

BONSAI_STARTUP void limits_from_env() {
  const char* text = option_env(Opt::limits);
  if (!text || !*text) return;
  LimitSet& set = g_ring.env_limits;  // by the first view's slot (limiter_local.h); set-up runs once
  ParseError err;
  if (!limit_parse(text, set, err)) {
    blog(LogLevel::Error, "BONSAI_LIMITS: %s at offset %zu in '%s'; running unlimited",
         err.message, err.offset, text);
    return;
  }
  // `:ceil=` borrows from this user's host capacity, if one is installed.
  LimitSet capacity;
  char why[320];
  why[0] = '\0';
  if (limits_have_ceil(set) && shm_host_attach(option_env(Opt::shm_prefix), why, sizeof why) &&
      shm_host_capacity(capacity))
    shares_resolve(set, capacity);
  else if (why[0])
    blog(LogLevel::Warn, "shares: %s; every rule is held to its own rate", why);
  limiter_install(set);
}

}  // namespace

BONSAI_STARTUP bool limiter_init_once() noexcept {
  int expected = kUninit;
  if (!g_limiter.state.compare_exchange_strong(expected, kIniting, std::memory_order_acq_rel))
    return expected == kActive;  // another thread (or this one, re-entered) is setting up
  int saved_errno = errno;
  g_limiter.pid.store(raw_getpid(), std::memory_order_relaxed);
  blog_set_level(option_env(Opt::log));
  g_limiter.buckets = g_local_buckets;
  g_limiter.shares = &g_local_shares;
  options_load(g_limiter.opts);
  // BONSAI_LEAVE=1: this process (and what it executes) left the service on purpose.
  if (exec_env_leaving(option_env(Opt::leave))) {
    g_limiter.state.store(kActive, std::memory_order_release);
    limiter_update_fast_view();
    errno = saved_errno;
    return true;
  }
  // BONSAI_IO_URING=deny: io_uring_setup fails with ENOSYS here and in children (set-up
  // only: libseccomp allocates; fails open, said once).
  uring_guard_from_env();
  exec_env_capture();  // what exec/spawn hand down (interpose/exec_calls.cc)
  shm_fd_configure(option_env(Opt::shm_fd), option_env(Opt::shm_uid));
  limits_from_env();
  // Count only when someone can read the counts (BONSAI_STATS here; a service
  // segment's slot replaces this pointer when attached).
  if (stats_path_from_env()) g_limiter.counters = &g_local_counters;
  // BONSAI_SERVICE: the service segment's limits replace BONSAI_LIMITS and are
  // watched for live changes (see shm/shm_attach.h); on any problem, fail open.
  if (const char* service = option_env(Opt::service); service && *service) {
    // On the stack: nothing of it is used after set-up (the watch keeps `att.seq`'s value,
    // a pointer into the segment), and a page of .bss written here would be a fault of
    // every service member's start.
    ShmAttach att{};
    // The prefix again for the watch below, copied: option_env's values point into the
    // environment as it was at set-up, which a program may overwrite (setproctitle).
    static char prefix[72];
    const char* given = option_env(Opt::shm_prefix);
    for (size_t i = 0; given && given[i] && i + 1 < sizeof prefix; ++i) prefix[i] = given[i];
    char why[320];
    if (shm_attach(service, given, att, why, sizeof why, option_env(Opt::slot))) {
      if (att.shared_buckets) g_limiter.buckets = att.shared_buckets;
      g_limiter.counters = att.counters ? att.counters : &g_local_counters;
      g_limiter.wait_hist = att.wait_hist;
      g_limiter.protect = att.protect;
      protect_refresh();
      if (att.shares) g_limiter.shares = att.shares;
      char host_why[320];
      bool newer_host = false;
      // A host segment of a newer layout is met by every process of the service: said by
      // the first (the notices word), as a newer service segment is.
      if (!att.limits_problem && limits_have_ceil(att.limits) &&
          !shm_host_attach(given, host_why, sizeof host_why, &newer_host) && host_why[0] &&
          (!newer_host || shm_notice_first(kNoticeNewerHost)))
        blog(LogLevel::Warn, "shares: service '%s': %s; every rule is held to its own rate%s", service, host_why,
             newer_host ? " (said once for the service)" : "");
      fleet_lapse_attach(att.fleet);
      // Said by the service's 1st, 2nd, 4th... such process: a table held full (forged
      // slots too) is not a line on every start's stderr; `bonsaictl stat` counts them all.
      if (!att.counters && slot_claim_failure_is_news())
        blog(LogLevel::Warn, "service '%s': no free slot; this process is not counted (bonsaictl stat counts "
             "every such process)", service);
      limiter_uninstall();
      if (att.limits_problem) blog(LogLevel::Warn, "service '%s': %s; running unlimited", service, att.limits_problem);
      else if (limiter_install(att.limits)) shm_mark_seen(att.limits_seq);
      g_limiter.seen_seq.store(att.limits_seq, std::memory_order_relaxed);
      g_limiter.watch = {att.seq, []() noexcept {
                           protect_refresh();  // `load` may have protected the service since
                           LimitSet fresh;  // one installer per sequence (shm_limits_fetch)
                           uint64_t seq;
                           const char* problem;
                           if (shm_limits_fetch(fresh, seq, problem)) {
                             // A capacity installed since set-up (bonsaictl load makes it first).
                             char quiet[8];
                             if (limits_have_ceil(fresh) && !shm_host())
                               (void)shm_host_attach(prefix, quiet, sizeof quiet);
                             if (limiter_install(fresh)) shm_mark_seen(seq), fleet_lapse_cleared();
                           } else if (problem) {
                             blog(LogLevel::Warn, "service limits changed but unusable (%s); keeping the old ones", problem);
                           }
                         }};
    } else if (why[0]) {  // empty: another process of the service said it (shm_attach.h)
      blog(LogLevel::Warn, "%s; running without service limits", why);
    }
  }
  at_fork_child(after_fork_in_child);
  errno = saved_errno;
  g_limiter.state.store(kActive, std::memory_order_release);
  limiter_update_fast_view();
  return true;
}

}  // namespace bonsai
