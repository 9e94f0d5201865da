// SPDX-License-Identifier: MIT
// The library's refill under shares (bucket/share.h): the ceiling, the guaranteed rate,
// borrowing from the host, and the sleeps between them. Slow path only: the fast path
// (spending a thread's prepaid credit) is the same with or without shares. Runs inside
// the host process: no allocation, no locks; anything wrong with the host segment holds
// the rule to its own rate (said once).
#include <pthread.h>

#include "bucket/share.h"
#include "log/blog.h"
#include "runtime/host_clock.h"
#include "runtime/options.h"
#include "runtime/limiter_state.h"
#include "runtime/ticket.h"
#include "runtime/ticket_pay.h"
#include "runtime/pace.h"
#include "runtime/wait.h"
#include "shm/shm_attach.h"
#include "shm/shm_fd.h"
#include "shm/shm_host.h"
#include "shm/shm_siblings.h"
#include "sys/cancel_cleanup.h"
#include "sys/clock.h"

namespace bonsai {
namespace {

// This thread's parameters of the last sharing rule it refilled: rebuilt when the view,
// the bucket or the host's capacity changed (three bucket_params, ~100 ns, not per refill).
struct ShareCache {
  uint64_t gen = 0;
  uint8_t bucket = kNoBucket;
  uint64_t host_seq = 0;
  bool shares = false;
  uint8_t host1 = 0;
  uint8_t nohost1 = 0;    // no host segment: the capacity rule its rate takes are published for
  uint64_t reserved = 0;  // units/s of the capacity held back for the user's containers
  Rule rule{};            // the rule and its capacity: p.host is rebuilt when `reserved` moves
  Rule cap{};
  ShareParams p{};
};
constinit thread_local ShareCache t_share{};

// The sharing parameters of the ticket's rule, or false (held to its rate).
bool share_lookup(const Ticket& t, ShareCache*& out) noexcept {
  ShmHost* host = shm_host();
  ShareCache& c = t_share;
  out = &c;
  uint64_t hseq = host ? host->capacity.seq.load(std::memory_order_acquire) : 0;
  if (c.gen != t.gen || c.bucket != t.bucket || c.host_seq != hseq) {
    c = ShareCache{};
    Rule rule;
    words_load(&rule, &t.view->set.rules[t.bucket], sizeof rule);
    if (view_gen(t.view) != t.gen) return false;  // the slot was reused: this refill is held to its rate
    c.gen = t.gen;
    c.bucket = t.bucket;
    c.host_seq = hseq;
    if (rule_ceil_above(rule)) {
      Rule cap;
      if (host && !(hseq & 1) && shm_host_rule(rule.host1, cap) && share_params(rule, cap, c.p)) {
        c.shares = true;
        c.host1 = rule.host1;
        c.rule = rule;
        c.cap = cap;
      } else if (!host && shm_attached()) {
        // No host segment (a container's device does not mount it, docs/reference/shares.md): the
        // rule runs at its guaranteed rate; the slot tells `stat`, nothing else is said.
        // Its takes are published for the host's borrowers (shm/shm_siblings.h).
        shm_mark_flag(kSlotNoHost);
        c.nohost1 = rule.host1;
      } else {
        BONSAI_LOG_ONCE(LogLevel::Warn,
                        "shares: a rule has a ceil but no usable host capacity (bonsaictl load a file with "
                        "`host: capacity:`); it is held to its own rate");
      }
    }
  }
  if (c.shares) {
    // What the user's containers take at their rates the host's bucket never sees: not
    // lendable (a scan of their segments at most every kSiblingsRefreshNs, else a load).
    uint64_t r = shm_siblings_reserved(option_env(Opt::shm_prefix), shm_owner_uid(), c.host1, mono_ns());
    if (r != c.reserved) {
      Rule cap = c.cap;
      rule_set_rate(cap, share_host_rate(c.cap.rate, r));
      ShareParams p;
      if (share_params(c.rule, cap, p)) c.p = p, c.reserved = r;
    }
  }
  out = &c;
  return c.shares;
}

struct ShareSleep {
  uint64_t deadline;  // host clock
  uint64_t offset;
  uint64_t seen;
  bool cancellable;
};

void share_wait_cancelled(void* slot) {
  shm_wait_end(static_cast<ShmSlot*>(slot));
  t_thread.in_wait = false;
}

// Sleeps to the deadline; a change of the limits ends the sleep (the call then goes:
// at most one refill early). @return false if the limits changed.
[[gnu::noinline]] bool share_sleep(ShareSleep* s) noexcept {
  const std::atomic<uint64_t>* watch = g_limiter.watch.seq.load(std::memory_order_acquire);
  wait_until(s->deadline + s->offset, g_limiter.opts.spin_ns, s->cancellable, watch, s->seen);
  return !(watch && watch->load(std::memory_order_acquire) != s->seen);
}

}  // namespace

bool share_wait_slow(Ticket& t, bool cancellable, uint64_t units, uint64_t* waited) noexcept {
  ShareCache* c;
  if (!share_lookup(t, c)) {
    if (c->nohost1) shm_publish_nohost(c->nohost1, units);  // taken at the rate by the caller
    return false;
  }
  ShmHost* host = shm_host();
  if (!host) return false;
  BucketState& own = g_limiter.buckets[t.bucket];
  BucketState& hb = host->buckets[c->host1 - 1];
  uint64_t offset = limiter_clock_offset();
  uint64_t slack = g_limiter.opts.debt_ns;
  uint64_t start = mono_ns();
  uint64_t now = start - offset;
  ShareStep st = share_take(own, hb, c->p, units, now, slack, nullptr);
  uint64_t ceil_at = st.ceil_at;
  uint64_t held_rate = 0, held_ceil = 0;
  bool in_wait = t_thread.in_wait;  // a signal handler's call never waits in there
  ShmSlot* slot = nullptr;
  if (st.way == ShareWay::Wait || st.go_at) {
    if (!in_wait) {
      t_thread.in_wait = true;
      slot = shm_wait_begin();
    }
    ShareSleep sl{0, offset, g_limiter.seen_seq.load(std::memory_order_relaxed), cancellable};
    BONSAI_CLEANUP_PUSH(share_wait_cancelled, slot);
    bool going = !in_wait;
    while (going && st.way == ShareWay::Wait) {  // share_take commits to the rate after kShareRounds
      sl.deadline = st.go_at > ceil_at ? st.go_at : ceil_at;  // nothing goes before the ceiling
      uint64_t before = mono_ns();
      going = share_sleep(&sl);
      uint64_t slept = mono_ns() - before;
      (st.go_at >= ceil_at ? held_rate : held_ceil) += slept;
      if (going) st = share_take(own, hb, c->p, units, mono_ns() - offset, slack, &st);
    }
    if (going && st.way != ShareWay::Wait && st.go_at > mono_ns() - offset) {
      sl.deadline = st.go_at;
      uint64_t before = mono_ns();
      share_sleep(&sl);
      (st.go_at > ceil_at ? held_rate : held_ceil) += mono_ns() - before;
    }
    if (st.way == ShareWay::Wait) st.way = ShareWay::Rate;  // left early (new limits, a handler's call): untaken
    BONSAI_CLEANUP_POP();
    if (!in_wait) {
      shm_wait_end(slot);
      t_thread.in_wait = false;
    }
  }
  ShmShares* sh = g_limiter.shares;
  if (sh) {
    if (st.way == ShareWay::Borrow) sh->borrowed[t.bucket].fetch_add(units, std::memory_order_relaxed);
    if (held_rate) sh->held_rate_ns[t.bucket].fetch_add(held_rate, std::memory_order_relaxed);
    if (held_ceil) sh->held_ceil_ns[t.bucket].fetch_add(held_ceil, std::memory_order_relaxed);
  }
  uint64_t end = mono_ns();
  *waited = held_rate || held_ceil ? (end > start ? end - start : 1) : 0;
  if (t_thread.credit_gen == t.gen) lane_add(t_thread.credit[t.bucket], static_cast<int64_t>(units));
  return true;
}

bool share_settle_slow(const Ticket& t, uint64_t units) noexcept {
  // Settles follow every read beyond the credit: without a host segment, only what a
  // container's process took is published (the cached look-up, no syscall).
  ShmHost* host = shm_host();
  ShareCache* c;
  if (!host) {
    if (shm_attached() && !share_lookup(t, c) && c->nohost1) shm_publish_nohost(c->nohost1, units);
    return false;
  }
  if (!share_lookup(t, c)) return false;
  uint64_t now = mono_ns() - limiter_clock_offset();
  ShareWay way = share_take_late(g_limiter.buckets[t.bucket], host->buckets[c->host1 - 1], c->p, units, now);
  if (way == ShareWay::Borrow && g_limiter.shares)
    g_limiter.shares->borrowed[t.bucket].fetch_add(units, std::memory_order_relaxed);
  return true;
}

PaceShare share_pace(const Ticket& t) noexcept {
  ShmHost* host = shm_host();
  ShareCache* c;
  if (!host || !share_lookup(t, c)) return {};
  return {&host->buckets[c->host1 - 1], &c->p};
}

}  // namespace bonsai
