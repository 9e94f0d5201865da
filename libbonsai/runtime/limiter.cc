// SPDX-License-Identifier: MIT
// The ticket's slow paths (see ticket.h, ticket_pay.h, ticket_count.h): reading a view
// slot as of one generation (the readers of view_ring.h's protocol), waiting and
// credit, settling, a thread's counter lane, and the watch's refresh. Runs inside the
// host process: no allocation, no locks, no exceptions; on anything unexpected it runs
// unlimited and says so once. Installs: limiter_install.cc; the set-up: limiter_setup.cc.
#include <pthread.h>

#include "bucket/limits_carry.h"
#include "log/blog.h"
#include "runtime/fd_class.h"
#include "runtime/fleet_lapse.h"
#include "runtime/host_clock.h"
#include "runtime/limiter_install.h"
#include "runtime/limiter_local.h"
#include "runtime/limiter_setup.h"
#include "runtime/limiter_state.h"
#include "runtime/ticket.h"
#include "runtime/ticket_count.h"
#include "runtime/ticket_pay.h"
#include "runtime/view_ring.h"
#include "runtime/wait.h"
#include "shm/shm_attach.h"
#include "sys/cancel_cleanup.h"
#include "sys/clock.h"

namespace bonsai {

namespace {

// Reads rule `r` of view `v` word by word (its slot may be rewritten meanwhile: the
// caller checks the generation after).
Rule rule_load(const LimitsView* v, uint32_t r) noexcept {
  Rule out;
  words_load(&out, &v->set.rules[r], sizeof out);
  return out;
}

uint32_t count_load(const LimitsView* v) noexcept {
  uint32_t n = __atomic_load_n(&v->set.count, __ATOMIC_ACQUIRE);
  return n < kMaxRules ? n : kMaxRules;
}

// True if `b` (generation `gb`) has the rules of `a` (generation `ga`) in the same order,
// both read consistently.
bool same_rules(const LimitsView* a, uint64_t ga, const LimitsView* b, uint64_t gb) noexcept {
  if (!a || !b) return false;
  uint32_t n = count_load(a);
  bool same = n == count_load(b);
  for (uint32_t r = 0; same && r < n; ++r) same = rule_continues(rule_load(a, r), rule_load(b, r));
  return same && view_gen(a) == ga && view_gen(b) == gb;
}

// The bucket of view `v` that continues `rule`, its parameters in `*p`, read as of
// generation `*gen`. @return kNoBucket if none or no consistent read.
uint8_t rule_find(const LimitsView* v, const Rule& rule, uint64_t* gen, BucketParams* p) noexcept {
  uint64_t g = view_gen(v);
  if (g & 1) return kNoBucket;
  uint8_t found = kNoBucket;
  uint32_t n = count_load(v);
  for (uint32_t r = 0; r < n && found == kNoBucket; ++r)
    if (rule_continues(rule, rule_load(v, r))) found = static_cast<uint8_t>(r);
  if (found != kNoBucket) words_load(p, &v->params[found], sizeof *p);
  if (view_gen(v) != g) return kNoBucket;
  *gen = g;
  return found;
}

void wait_cancelled(void* slot) {
  shm_wait_end(static_cast<ShmSlot*>(slot));
  t_thread.in_wait = false;
}

struct WaitPlan {
  Ticket* t;            // moves to the new view when the limits change under the wait
  Rule rule;            // the ticket's rule, to find it in a new view
  bool have_rule;
  bool moved;           // the ticket moved to another view
  const BucketState* bucket;
  uint64_t my_tat;      // host clock: where this take ends in the bucket's queue
  uint64_t deadline;    // host clock
  uint64_t late_seen;   // the bucket's late_ns before the take
  uint64_t offset;      // this process's clock minus the host's
  uint64_t slack;
  uint64_t seen;        // the limits' sequence the wait is under
  bool cancellable;
};

// The limits changed while the taker slept: its take, already in the bucket's queue
// (converted with the bucket, bucket/limits_carry.h), is re-timed at the new rate, and
// the ticket moves to the bucket that continues its rule. @return false if it may go
// now (its rule removed, no limits, or the new view unreadable).
bool retime(WaitPlan* w) noexcept {
  uint64_t seq = g_limiter.watch.seq.load(std::memory_order_acquire)->load(std::memory_order_acquire);
  if (g_limiter.seen_seq.load(std::memory_order_relaxed) != seq) limiter_refresh_slow();
  w->seen = seq;
  const LimitsView* nv = g_limiter.view.load(std::memory_order_acquire);
  if (!nv || !w->have_rule) return false;
  // The same view: the new limits were unusable (the old ones stay), or another thread
  // is installing them right now (this wait then keeps its old deadline).
  if (nv == w->t->view && view_gen(nv) == w->t->gen) return true;
  uint64_t gen = 0;
  BucketParams p{};
  uint8_t b = rule_find(nv, w->rule, &gen, &p);
  if (b == kNoBucket) return false;
  uint64_t now = mono_ns() - w->offset;
  w->my_tat = bucket_carry_tat(w->my_tat, w->t->params, p, now);
  w->deadline = bucket_eligible(p, w->my_tat, now, w->slack);
  Ticket& t = *w->t;
  t.view = nv;
  t.gen = gen;
  t.bucket = b;
  t.params = p;
  w->moved = true;
  w->bucket = &g_limiter.buckets[b];
  w->late_seen = w->bucket->late_ns.load(std::memory_order_relaxed);
  return w->deadline != 0;
}

// Sleeps to the taker's turn. Reads charged late while it slept moved ahead of it: it
// waits that much more (a few rounds at most; each finds less). New limits re-time the
// wait (retime). Apart from its caller so that no local of the caller lives across the
// cancellation buffer's setjmp.
[[gnu::noinline]] void sleep_to_turn(WaitPlan* w) noexcept {
  const std::atomic<uint64_t>* watch = g_limiter.watch.seq.load(std::memory_order_acquire);
  for (int round = 0; w->deadline && round < 8;) {
    // A fleet lease that runs out first wakes the wait: the fallback re-times it.
    uint64_t until = fleet_lapse_wake(w->deadline);
    if (watch && g_limiter.view.load(std::memory_order_acquire) != w->t->view) {
      if (!retime(w)) return;  // new limits installed without a new sequence (the fleet fallback)
      continue;
    }
    wait_until(until + w->offset, g_limiter.opts.spin_ns, w->cancellable, watch, w->seen);
    if (watch && watch->load(std::memory_order_acquire) != w->seen) {
      if (!retime(w)) return;
      continue;
    }
    if (until < w->deadline) {
      if (fleet_lapse_due(mono_ns() - w->offset)) fleet_lapse_apply();
      continue;  // the view check above re-times the wait under the fallback
    }
    ++round;
    w->deadline = bucket_recheck(*w->bucket, w->t->params, w->deadline, &w->late_seen, mono_ns() - w->offset,
                                 w->slack);
  }
}
}  // namespace

bool limiter_same_rules(const LimitsView* a, uint64_t ga, const LimitsView* b, uint64_t gb) noexcept {
  return same_rules(a, ga, b, gb);
}

bool ticket_read_view(Ticket& t, const LimitsView* v, int fd) noexcept {
  bool have_kind = false;
  FdKind kind = FdKind::None;
  for (int tries = 0; tries < 4; ++tries) {
    if (tries) v = g_limiter.view.load(std::memory_order_acquire);
    if (!v) {
      t = Ticket{nullptr, kNoBucket, t.call, t.waited_ns};
      return true;
    }
    uint64_t g = view_gen(v);
    if (g & 1) continue;
    bool sensitive = __atomic_load_n(&v->table.fd_sensitive, __ATOMIC_RELAXED);
    if (sensitive && !have_kind) {
      kind = fd < 0 ? FdKind::None : fd_kind_of(fd);
      have_kind = true;
    }
    size_t k = sensitive ? static_cast<size_t>(kind) : 0;
    uint8_t b = __atomic_load_n(&v->table.bucket_of[static_cast<size_t>(t.call)][k], __ATOMIC_ACQUIRE);
    BucketParams p{};
    if (b < kMaxRules) words_load(&p, &v->params[b], sizeof p);
    if (view_gen(v) != g) continue;
    t.view = v;
    t.gen = g;
    t.bucket = b < kMaxRules ? b : kNoBucket;
    t.params = p;
    return true;
  }
  BONSAI_LOG_ONCE(LogLevel::Warn, "the limits changed faster than a call could read them: calls went unlimited");
  t.bucket = kNoBucket;
  return false;
}

uint64_t ticket_wait_slow(Ticket& t, bool cancellable, uint64_t need) noexcept {
  BucketState& b = g_limiter.buckets[t.bucket];
  const BucketParams p = t.params;
  if (p.per_call) need = 0;
  uint64_t waited = 0;
  uint64_t offset = limiter_clock_offset();
  uint64_t slack = g_limiter.opts.debt_ns;
  uint64_t late_seen = b.late_ns.load(std::memory_order_relaxed);  // before the take: never owes a wait
  uint64_t now = mono_ns();
  if (fleet_lapse_due(now - offset)) [[unlikely]] fleet_lapse_apply();  // this take's wait is re-timed
  uint64_t units = credit_refill_units(p, t_thread.credit[t.bucket], need);
  if (share_wait_slow(t, cancellable, units, &waited)) return waited;
  // bucket_take bounds tat (max_ahead_ns), so a garbage clock cannot make this wait long.
  uint64_t tat = bucket_take(b, p, units, now - offset);
  uint64_t deadline = bucket_eligible(p, tat, now - offset, slack);
  if (deadline && !t_thread.in_wait) {  // a signal handler's call never waits in there
    t_thread.in_wait = true;
    ShmSlot* slot = shm_wait_begin();  // seen by `bonsaictl set --wait`
    WaitPlan w{&t, {}, false, false, &b, tat, deadline, late_seen, offset, slack,
               g_limiter.seen_seq.load(std::memory_order_relaxed), cancellable};
    if (g_limiter.watch.seq.load(std::memory_order_relaxed)) {  // the rule, to find it again if the limits change
      w.rule = rule_load(t.view, t.bucket);
      w.have_rule = view_gen(t.view) == t.gen;
    }
    // A thread cancelled in a cancellable wait leaves the slot's count of sleepers too,
    // or `set --wait` would wait for it for as long as its process lives.
    BONSAI_CLEANUP_PUSH(wait_cancelled, slot);
    sleep_to_turn(&w);
    BONSAI_CLEANUP_POP();
    shm_wait_end(slot);
    t_thread.in_wait = false;
    uint64_t end = mono_ns();
    waited = end > now ? end - now : 1;
    // Moved to new limits: this thread's credit moves with it (a rate change keeps it).
    if (w.moved && t_thread.credit_gen != t.gen) thread_credit_reset(t.view, t.gen);
  }
  if (t_thread.credit_gen == t.gen) lane_add(t_thread.credit[t.bucket], static_cast<int64_t>(units));
  return waited;
}

double ticket_ahead(const Ticket& t) noexcept {
  if (!t.view || t.bucket >= kMaxRules) return 0;
  const BucketParams& p = t.params;
  if (p.per_call || p.depth_ns == 0) return 0;
  uint64_t now = mono_ns() - limiter_clock_offset();
  uint64_t tat = g_limiter.buckets[t.bucket].tat_ns.load(std::memory_order_relaxed);
  int64_t credit = t_thread.credit_gen == t.gen ? t_thread.credit[t.bucket] : 0;
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
  if (share_settle_slow(t, static_cast<uint64_t>(owed))) return;
  bucket_take_late(g_limiter.buckets[t.bucket], t.params, static_cast<uint64_t>(owed), mono_ns() - limiter_clock_offset());
}

void ticket_charge_stale(const Ticket& t, int64_t units) noexcept {
  if (units > 0)
    bucket_take_late(g_limiter.buckets[t.bucket], t.params, static_cast<uint64_t>(units), mono_ns() - limiter_clock_offset());
}

void thread_credit_reset(const LimitsView* v, uint64_t gen) noexcept {
  // The same rules in the same order (a rate change): each bucket keeps its credit, taken
  // from the bucket and carried with it in units. Else the credit is dropped (under a
  // millisecond of rate per bucket, never spent twice).
  const LimitsView* old = t_thread.credit_view;
  if (!old || !v || !same_rules(old, t_thread.credit_gen, v, gen))
    for (auto& c : t_thread.credit) c = 0;
  t_thread.credit_view = v;
  t_thread.credit_gen = gen;
}

unsigned thread_lane_assign() noexcept {
  unsigned n = g_lanes_used.fetch_add(1, std::memory_order_relaxed) + 1;
  unsigned lane = n < kCounterLanes ? n : kCounterLanes;
  t_thread.lane_plus1 = static_cast<uint8_t>(lane);
  return lane;
}

void limiter_refresh_slow() noexcept {
  // One installer at a time: a thread that finds another installing (or a signal
  // handler interrupting one) leaves seen_seq alone and looks again at its next call.
  if (!limiter_install_begin()) return limiter_attach_wait();
  uint64_t seq = g_limiter.watch.seq.load(std::memory_order_acquire)->load(std::memory_order_acquire);
  g_limiter.seen_seq.store(seq, std::memory_order_relaxed);
  if (g_limiter.watch.refresh) g_limiter.watch.refresh();
  limiter_install_end();
  if (shm_lost()) [[unlikely]]
    BONSAI_LOG_ONCE(LogLevel::Warn,
                    "service segment truncated or damaged under this process (SIGBUS caught): keeping the "
                    "limits in force with this process's own buckets; restart the service to rejoin it");
}


}  // namespace bonsai
