// SPDX-License-Identifier: MIT
// The limiter's slow paths and set-up (see limiter.h). Runs inside the host process:
// no allocation, no locks, no exceptions; on anything unexpected it runs unlimited
// and says so once.
#include "runtime/limiter.h"
#include "runtime/exec_env.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/limit_parse.h"
#include "log/blog.h"
#include "runtime/stats_dump.h"
#include "runtime/uring_guard.h"
#include "runtime/wait.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"
#include "shm/shm_clock.h"
#include "sys/clock.h"
#include "sys/env.h"

namespace bonsai {

constinit Limiter g_limiter{};
constinit thread_local ThreadState t_thread{};

namespace {

constinit BucketState g_local_buckets[kMaxRules]{};
constinit ProcessCounters g_local_counters{};

// Views are never freed: a reader may still hold an old one. Installs are rare
// (start-up and operator changes), so a small ring is enough.
constexpr size_t kViewRing = 8;
constinit LimitsView g_views[kViewRing]{};
constinit std::atomic<size_t> g_next_view{0};

constinit std::atomic<unsigned> g_lanes_used{0};

void after_fork_in_child() {
  // Attached to a service: the child counts in a slot of its own (the parent's slot
  // must keep the parent's counts); else its inherited counters start from zero.
  g_limiter.counters = shm_fork_counters(g_limiter.counters, &g_local_counters);
  if (g_limiter.counters) counters_reset(*g_limiter.counters);
  g_lanes_used.store(0, std::memory_order_relaxed);
  t_thread.lane_plus1 = 0;  // the only thread: takes lane 1 again
  g_limiter.pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  limiter_update_fast_view();
}

void limits_from_env() {
  const char* text = option_env(Opt::limits);
  if (!text || !*text) return;
  static LimitSet set;  // zero-initialised; the constructor runs once
  ParseError err;
  if (!limit_parse(text, set, err)) {
    blog(LogLevel::Error, "BONSAI_LIMITS: %s at offset %zu in '%s'; running unlimited",
         err.message, err.offset, text);
    return;
  }
  limiter_install(set);
}

}  // namespace

bool limiter_install(const LimitSet& set) noexcept {
  size_t slot = g_next_view.fetch_add(1, std::memory_order_relaxed) % kViewRing;
  LimitsView& v = g_views[slot];
  if (!limits_view_build(set, v)) return false;
  g_limiter.view.store(&v, std::memory_order_release);
  limiter_update_fast_view();
  return true;
}

void limiter_uninstall() noexcept {
  g_limiter.view.store(nullptr, std::memory_order_release);
  limiter_update_fast_view();
}

void limiter_update_fast_view() noexcept {
  static constinit LimitsView unlimited = [] {
    LimitsView v{};
    for (auto& row : v.table.bucket_of)
      for (auto& cell : row) cell = kNoBucket;
    return v;
  }();
  const LimitsView* fast = nullptr;
  if (g_limiter.state.load(std::memory_order_relaxed) != kUninit && !g_limiter.counters && !g_limiter.watch.seq) {
    const LimitsView* v = g_limiter.view.load(std::memory_order_relaxed);
    if (!v) fast = &unlimited;
    else if (!v->table.fd_sensitive) fast = v;
  }
  g_limiter.fast_view.store(fast, std::memory_order_release);
}

bool limiter_init_once() noexcept {
  int expected = kUninit;
  if (!g_limiter.state.compare_exchange_strong(expected, kIniting, std::memory_order_acq_rel))
    return expected == kActive;  // another thread (or this one, re-entered) is setting up
  int saved_errno = errno;
  g_limiter.pid.store(static_cast<int>(getpid()), std::memory_order_relaxed);
  blog_set_level(option_env(Opt::log));
  g_limiter.buckets = g_local_buckets;
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
    static ShmAttach att;  // zero-initialised; the constructor runs once
    char why[320];
    if (shm_attach(service, option_env(Opt::shm_prefix), att, why, sizeof why)) {
      if (att.shared_buckets) g_limiter.buckets = att.shared_buckets;
      g_limiter.counters = att.counters ? att.counters : &g_local_counters;
      g_limiter.wait_hist = att.wait_hist;
      if (!att.counters) blog(LogLevel::Warn, "service '%s': no free slot; this process is not counted", service);
      limiter_uninstall();
      if (att.limits_problem) blog(LogLevel::Warn, "service '%s': %s; running unlimited", service, att.limits_problem);
      else if (limiter_install(att.limits)) shm_mark_seen(att.limits_seq);
      g_limiter.seen_seq.store(att.limits_seq, std::memory_order_relaxed);
      g_limiter.watch = {att.seq, []() noexcept {
                           LimitSet fresh;  // one installer per sequence (shm_limits_fetch)
                           uint64_t seq;
                           const char* problem;
                           if (shm_limits_fetch(fresh, seq, problem)) {
                             if (limiter_install(fresh)) shm_mark_seen(seq);
                           } else if (problem) {
                             blog(LogLevel::Warn, "service limits changed but unusable (%s); keeping the old ones", problem);
                           }
                         }};
    } else {
      blog(LogLevel::Warn, "%s; running without service limits", why);
    }
  }
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
  errno = saved_errno;
  g_limiter.state.store(kActive, std::memory_order_release);
  limiter_update_fast_view();
  return true;
}

namespace {

// This process's CLOCK_MONOTONIC minus the host's (a time namespace; see
// shm/shm_clock.h), read once per process (pid: a forked child may be in another
// namespace). Buckets, shared ones included, run on the host clock.
constinit std::atomic<int64_t> g_clock_offset{0};
constinit std::atomic<int> g_clock_offset_pid{0};

uint64_t clock_offset() noexcept {
  int pid = g_limiter.pid.load(std::memory_order_relaxed);
  if (g_clock_offset_pid.load(std::memory_order_acquire) != pid) [[unlikely]] {
    g_clock_offset.store(timens_mono_offset_read(), std::memory_order_relaxed);
    g_clock_offset_pid.store(pid, std::memory_order_release);
  }
  return static_cast<uint64_t>(g_clock_offset.load(std::memory_order_relaxed));
}

}  // namespace

namespace {
void wait_cancelled(void* slot) {
  shm_wait_end(static_cast<ShmSlot*>(slot));
  t_thread.in_wait = false;
}

struct WaitPlan {
  const BucketState* bucket;
  const BucketParams* params;
  uint64_t deadline;   // host clock
  uint64_t late_seen;  // the bucket's late_ns before the take
  uint64_t offset;     // this process's clock minus the host's
  uint64_t slack;
  bool cancellable;
};

// Sleeps to the taker's turn. Reads charged late while it slept moved ahead of it: it
// waits that much more (a few rounds at most; each finds less, and new limits end the
// wait). Apart from its caller so that no local of the caller lives across the
// cancellation buffer's setjmp.
[[gnu::noinline]] void sleep_to_turn(WaitPlan* w) noexcept {
  const std::atomic<uint64_t>* watch = g_limiter.watch.seq;
  uint64_t seen = g_limiter.seen_seq.load(std::memory_order_relaxed);
  uint64_t deadline = w->deadline;
  for (int round = 0; deadline && round < 8; ++round) {
    wait_until(deadline + w->offset, g_limiter.opts.spin_ns, w->cancellable, watch, seen);
    if (watch && watch->load(std::memory_order_acquire) != seen) break;
    deadline = bucket_recheck(*w->bucket, *w->params, deadline, &w->late_seen, mono_ns() - w->offset, w->slack);
  }
}
}  // namespace

uint64_t ticket_wait_slow(const LimitsView* v, uint8_t bucket, bool cancellable, uint64_t need) noexcept {
  BucketState& b = g_limiter.buckets[bucket];
  const BucketParams& p = v->params[bucket];
  int64_t& credit = t_thread.credit[bucket];
  if (p.per_call) need = 0;
  uint64_t waited = 0;
  uint64_t offset = clock_offset();
  uint64_t slack = g_limiter.opts.debt_ns;
  uint64_t late_seen = b.late_ns.load(std::memory_order_relaxed);  // before the take: never owes a wait
  uint64_t now = mono_ns();
  uint64_t units = credit_refill_units(p, credit, need);
  // bucket_take bounds tat (max_ahead_ns), so a garbage clock cannot make this wait long.
  uint64_t deadline = bucket_take_due(b, p, units, now - offset, slack);
  if (deadline && !t_thread.in_wait) {  // a signal handler's call never waits in there
    t_thread.in_wait = true;
    ShmSlot* slot = shm_wait_begin();  // seen by `bonsaictl set --wait`
    WaitPlan w{&b, &p, deadline, late_seen, offset, slack, cancellable};
    // A thread cancelled in a cancellable wait leaves the slot's count of sleepers too,
    // or `set --wait` would wait for it for as long as its process lives.
    pthread_cleanup_push(wait_cancelled, slot);
    sleep_to_turn(&w);
    pthread_cleanup_pop(0);
    shm_wait_end(slot);
    t_thread.in_wait = false;
    uint64_t end = mono_ns();
    waited = end > now ? end - now : 1;
  }
  lane_add(credit, static_cast<int64_t>(units));
  return waited;
}

double ticket_ahead(const Ticket& t) noexcept {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.view->params[t.bucket];
  if (p.per_call || p.depth_ns == 0) return 0;
  uint64_t now = mono_ns() - clock_offset();
  uint64_t tat = g_limiter.buckets[t.bucket].tat_ns.load(std::memory_order_relaxed);
  int64_t credit = t_thread.credit[t.bucket];
  uint64_t prepaid = credit > 0 ? bucket_cost_ns(p, static_cast<uint64_t>(credit)) : 0;
  if (tat <= now + prepaid) return 0;
  double a = static_cast<double>(tat - now - prepaid) / static_cast<double>(p.depth_ns);
  return a < 4 ? a : 4;
}

void ticket_settle_slow(const Ticket& t) noexcept {
  int64_t& credit = t_thread.credit[t.bucket];
  int64_t owed = -credit;
  if (owed <= 0) return;
  lane_add(credit, owed);
  bucket_take_late(g_limiter.buckets[t.bucket], t.view->params[t.bucket], static_cast<uint64_t>(owed),
                   mono_ns() - clock_offset());
}

void thread_credit_reset(const LimitsView* v) noexcept {
  for (auto& c : t_thread.credit) c = 0;
  t_thread.credit_view = v;
}

unsigned thread_lane_assign() noexcept {
  unsigned n = g_lanes_used.fetch_add(1, std::memory_order_relaxed) + 1;
  unsigned lane = n < kCounterLanes ? n : kCounterLanes;
  t_thread.lane_plus1 = static_cast<uint8_t>(lane);
  return lane;
}

void limiter_refresh_slow() noexcept {
  uint64_t seq = g_limiter.watch.seq->load(std::memory_order_acquire);
  g_limiter.seen_seq.store(seq, std::memory_order_relaxed);
  if (g_limiter.watch.refresh) g_limiter.watch.refresh();
  if (shm_lost()) [[unlikely]]
    BONSAI_LOG_ONCE(LogLevel::Warn,
                    "service segment truncated or damaged under this process (SIGBUS caught): keeping the "
                    "limits in force with this process's own buckets; restart the service to rejoin it");
  // New rules renumber the buckets: this process's own buckets start afresh (the
  // service's shared ones are reset by bonsaictl when it writes the limits).
  if (g_limiter.buckets == g_local_buckets) buckets_renumbered(g_local_buckets, kMaxRules);
}


}  // namespace bonsai
