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
#include "runtime/ticket.h"
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

// The service's segment, mapped at the first limited call (shm/shm_attach.h): the watch
// points at g_attach_pending (1, against seen_seq 0) until then. g_attaching: 1 while a
// thread maps it (others wait for it, shortly), 2 once done (or given up).
constinit std::atomic<uint64_t> g_attach_pending{1};
constinit std::atomic<int> g_attaching{0};
constinit char g_prefix[72] = {};
constinit char g_slot_hint[96] = {};
constinit thread_local bool t_attaching = false;

// A forked child of an attached member: the watch it had, restored at its first call.
constinit const std::atomic<uint64_t>* g_fork_watched = nullptr;
constinit uint64_t g_fork_seen = 0;
void service_refresh() noexcept;

// The first call of a forked child of an attached member: its own slot, then the
// service's watch again (run as the watch's refresh: one installer).
void fork_claim() noexcept {
  g_limiter.counters = shm_fork_counters(nullptr, &g_local_counters);
  shm_mark_seen(g_fork_seen);  // the limits in force are the parent's, which it had seen
  g_limiter.seen_seq.store(g_fork_seen, std::memory_order_relaxed);
  g_limiter.watch.refresh = service_refresh;
  g_limiter.watch.seq.store(g_fork_watched, std::memory_order_release);
  limiter_update_fast_view();
}

BONSAI_STARTUP void after_fork_in_child() {
  // Forked while another thread mapped the service: that thread is not in the child and
  // its half-made attach cannot be finished here: the child runs without them, and says so.
  if (g_attaching.load(std::memory_order_acquire) == 1) {
    g_limiter.watch.seq.store(nullptr, std::memory_order_release);
    g_attaching.store(2, std::memory_order_release);
    limiter_install_end();
    blog(LogLevel::Warn, "forked while another thread attached to the service: this child runs without the "
         "service's limits");
  }
  // Attached to a service: the child counts in a slot of its own (the parent's slot
  // must keep the parent's counts), claimed at its first call as a new member's is (a
  // child that executes at once claims none); until then it counts nothing (it moved
  // nothing). Else its inherited counters start from zero.
  const std::atomic<uint64_t>* watched = g_limiter.watch.seq.load(std::memory_order_relaxed);
  if (shm_attached() && watched && watched != &g_attach_pending) {
    shm_fork_drop_slot();
    g_limiter.counters = nullptr;
    g_fork_watched = watched;
    g_fork_seen = g_limiter.seen_seq.load(std::memory_order_relaxed);
    g_limiter.watch.refresh = fork_claim;
    g_limiter.watch.seq.store(&g_attach_pending, std::memory_order_release);
  } else {
    g_limiter.counters = shm_fork_counters(g_limiter.counters, &g_local_counters);
    if (g_limiter.counters) counters_reset(*g_limiter.counters);
  }
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


// The live change of a mapped service's limits (the watch once attached).
void service_refresh() noexcept {
  protect_refresh();  // `load` may have protected the service since
  LimitSet fresh;  // one installer per sequence (shm_limits_fetch)
  uint64_t seq;
  const char* problem;
  if (shm_limits_fetch(fresh, seq, problem)) {
    // A capacity installed since set-up (bonsaictl load makes it first).
    char quiet[8];
    if (limits_have_ceil(fresh) && !shm_host()) (void)shm_host_attach(g_prefix, quiet, sizeof quiet);
    if (limiter_install(fresh)) shm_mark_seen(seq), fleet_lapse_cleared();
  } else if (problem) {
    blog(LogLevel::Warn, "service limits changed but unusable (%s); keeping the old ones", problem);
  }
}

// The first limited call of a service member: maps the segment, claims a slot, installs
// the service's limits and watches them. Runs as the watch's refresh (one installer).
void service_attach() noexcept {
  g_attaching.store(1, std::memory_order_release);
  t_attaching = true;
  // On the stack: nothing of it is used after (the watch keeps `att.seq`'s value, a
  // pointer into the segment).
  ShmAttach att{};
  char why[320];
  const char* service = option_env(Opt::service);
  if (!service) service = "";
  if (shm_map_service(att, why, sizeof why, g_slot_hint[0] ? g_slot_hint : nullptr)) {
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
        !shm_host_attach(g_prefix, host_why, sizeof host_why, &newer_host) && host_why[0] &&
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
    g_limiter.watch.refresh = service_refresh;
    g_limiter.watch.seq.store(att.seq, std::memory_order_release);
  } else {
    if (why[0]) blog(LogLevel::Warn, "%s; running without service limits", why);
    // Never again: the limits in force stay (BONSAI_LIMITS or none).
    g_limiter.watch.seq.store(nullptr, std::memory_order_release);
  }
  limiter_update_fast_view();
  t_attaching = false;
  g_attaching.store(2, std::memory_order_release);
}

}  // namespace

void limiter_attach_if_pending() noexcept {
  if (g_limiter.watch.seq.load(std::memory_order_acquire) == &g_attach_pending) limiter_refresh_slow();
}

void limiter_attach_wait() noexcept {
  // Another thread maps the service right now: this call waits for its limits and its
  // counters (a few hundred microseconds), unless it interrupted that very thread (a
  // signal handler's call) or the mapping takes unusually long (then it goes as it is).
  if (t_attaching || g_limiter.watch.seq.load(std::memory_order_acquire) != &g_attach_pending) return;
  for (int i = 0; i < 20000 && g_attaching.load(std::memory_order_acquire) != 2; ++i) raw_syscall3(SYS_sched_yield, 0, 0, 0);
}

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
    // The prefix and BONSAI_SLOT, copied: option_env's values point into the environment
    // as it was at set-up, which a program may overwrite (setproctitle).
    const char* given = option_env(Opt::shm_prefix);
    for (size_t i = 0; given && given[i] && i + 1 < sizeof g_prefix; ++i) g_prefix[i] = given[i];
    const char* hint = option_env(Opt::slot);
    for (size_t i = 0; hint && hint[i] && i + 1 < sizeof g_slot_hint; ++i) g_slot_hint[i] = hint[i];
    char why[320];
    if (shm_open_service(service, given, why, sizeof why)) {
      // Mapped at the first limited call (service_attach): until then every wrapper's
      // ticket finds the watch moved and comes here first. At once under `run --strict`
      // (its marked calls need the segment from the start: strict_calls.h) and for a
      // segment not of this build's layout (what is wrong is said at start).
      g_limiter.seen_seq.store(0, std::memory_order_relaxed);
      g_limiter.watch.refresh = service_attach;
      g_limiter.watch.seq.store(&g_attach_pending, std::memory_order_release);
      const char* strict = option_env(Opt::strict);
      if ((strict && *strict) || !shm_open_layout_ours()) service_attach();
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
