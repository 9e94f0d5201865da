// SPDX-License-Identifier: MIT
// Calls that must not wait (see pace.h): the descriptor's reservation in the bucket's
// queue, granted when due; and the per-descriptor table (pace_slots.h).
#include "runtime/pace.h"
#include "runtime/pace_slots.h"

#include <cerrno>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "log/blog.h"
#include "runtime/fd_class.h"
#include "runtime/fleet_lapse.h"
#include "runtime/host_clock.h"
#include "sys/clock.h"

namespace bonsai {

constinit std::atomic<int> g_pace_held{0};
constinit std::atomic<uint64_t> g_held_bits[kHeldWords]{};
constinit std::atomic<uint64_t> g_held_summary[kHeldWords / 64]{};

namespace {

constinit std::atomic<PaceSlot*> g_slots{nullptr};

PaceSlot* slots_map() noexcept {
  PaceSlot* s = g_slots.load(std::memory_order_acquire);
  if (s) [[likely]] return s;
  int saved = errno;
  void* p = mmap(nullptr, sizeof(PaceSlot) * kPaceFds, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved;
  if (p == MAP_FAILED) return nullptr;
  PaceSlot* mine = static_cast<PaceSlot*>(p);
  if (!g_slots.compare_exchange_strong(s, mine, std::memory_order_acq_rel)) {
    munmap(p, sizeof(PaceSlot) * kPaceFds);  // another thread mapped it first
    errno = saved;
    return s;
  }
  return mine;
}

}  // namespace

PaceSlot* pace_slot(int fd) noexcept {
  if (fd < 0 || fd >= kPaceFds) {
    if (fd >= kPaceFds)
      BONSAI_LOG_ONCE(LogLevel::Warn, "descriptor %d is beyond the pacing table (%d): its non-blocking calls wait",
                      fd, kPaceFds);
    return nullptr;
  }
  PaceSlot* s = slots_map();
  return s ? &s[fd] : nullptr;
}

PaceSlot* pace_slot_if(int fd) noexcept {
  if (fd < 0 || fd >= kPaceFds) return nullptr;
  PaceSlot* s = g_slots.load(std::memory_order_acquire);
  return s ? &s[fd] : nullptr;
}

bool pace_lock(PaceSlot& s) noexcept {
  int32_t me = g_limiter.pid.load(std::memory_order_relaxed);
  if (me <= 0) me = 1;
  for (int i = 0; i < 4096; ++i) {
    int32_t cur = s.lock.load(std::memory_order_relaxed);
    // Free, or held at a fork by a thread of the parent (it will never let it go).
    if (cur != me && s.lock.compare_exchange_weak(cur, me, std::memory_order_acquire)) {
      BONSAI_TSAN_ACQUIRE(&s.lock);
      return true;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  return false;
}

void pace_mark_held(int fd) noexcept {
  int w = fd / 64;
  uint64_t bit = uint64_t{1} << (fd % 64);
  if (!(g_held_bits[w].fetch_or(bit, std::memory_order_acq_rel) & bit)) g_pace_held.fetch_add(1, std::memory_order_relaxed);
  g_held_summary[w / 64].fetch_or(uint64_t{1} << (w % 64), std::memory_order_release);
}

void pace_clear_held(int fd) noexcept {
  if (fd < 0 || fd >= kPaceFds) return;
  int w = fd / 64;
  uint64_t bit = uint64_t{1} << (fd % 64);
  uint64_t before = g_held_bits[w].fetch_and(~bit, std::memory_order_acq_rel);
  if (!(before & bit)) return;
  g_pace_held.fetch_sub(1, std::memory_order_relaxed);
  if ((before & ~bit) == 0) {
    g_held_summary[w / 64].fetch_and(~(uint64_t{1} << (w % 64)), std::memory_order_acq_rel);
    if (g_held_bits[w].load(std::memory_order_acquire))  // marked again meanwhile
      g_held_summary[w / 64].fetch_or(uint64_t{1} << (w % 64), std::memory_order_release);
  }
}

unsigned pace_dir_events(unsigned d) noexcept {
  return d == kPaceRead ? unsigned{POLLIN | POLLRDNORM} : unsigned{POLLOUT | POLLWRNORM};
}

void pace_count_refused(const Ticket& t, bool refused) noexcept {
  ProcessCounters* pc = g_limiter.counters;
  if (!pc) return;
  auto c = static_cast<size_t>(t.call);
  (refused ? pc->refused[c] : pc->shortened[c]).fetch_add(1, std::memory_order_relaxed);
}

namespace {


// A descriptor whose calls must not wait: O_NONBLOCK on a socket, pipe or terminal
// (`dontwait`: MSG_DONTWAIT given). A regular file's O_NONBLOCK means nothing to the
// kernel and nothing here. `*cuttable` becomes false for a datagram or record socket.
bool must_not_wait(int fd, bool dontwait, bool* cuttable) noexcept {
  FdFacts f = fd_facts(fd, kAskMode | kAskFlags | kAskSockType);
  if (!S_ISSOCK(f.mode) && !S_ISFIFO(f.mode) && !S_ISCHR(f.mode)) return false;
  if (!dontwait && !f.nonblocking) return false;
  if (S_ISSOCK(f.mode) && f.sock_type && f.sock_type != SOCK_STREAM) *cuttable = false;
  return true;
}

int64_t granted(const Ticket& t) noexcept {
  if (t.params.per_call) return INT64_MAX;
  int64_t c = t_thread.credit[t.bucket];
  return c > 0 ? c : 0;
}

void add_credit(const Ticket& t, int64_t units) noexcept {
  if (t_thread.credit_gen == t.gen) lane_add(t_thread.credit[t.bucket], units);
}

void count_borrowed(const Ticket& t, const PaceTake& pt) noexcept {
  if (pt.way == PaceWay::Borrow && g_limiter.shares)
    g_limiter.shares->borrowed[t.bucket].fetch_add(pt.units, std::memory_order_relaxed);
}

}  // namespace

int64_t ticket_try_slow(Ticket& t, int fd, PaceDir dir, bool dontwait, uint64_t n, uint64_t chunk,
                        bool* cuttable) noexcept {
  PaceSlot* s = pace_slot(fd);
  if (!s) return kPaceBlocking;
  uint64_t offset = limiter_clock_offset();
  // A place taken earlier: granted once due, refused until then.
  if (s->held & (1u << dir)) {
    if (!pace_lock(*s)) return 0;  // a signal handler's call on a descriptor being changed: try again
    PaceReservation& r = s->res[dir];
    int64_t result = -2;
    if (!r.active || r.bucket != t.bucket || (r.gen != t.gen && !limiter_same_rules(r.view, r.gen, t.view, t.gen))) {
      r.active = false;  // of other limits: dropped (at most a quantum unused)
    } else if (mono_ns() < r.due_mono) {
      result = 0;
    } else {
      add_credit(t, r.units);
      r.active = false;
      result = granted(t);
    }
    if (!r.active) __atomic_store_n(&s->held, static_cast<uint8_t>(s->held & ~(1u << dir)), __ATOMIC_RELAXED);
    bool none = !s->held && !s->masked && !s->kick;
    pace_unlock(*s);
    if (none) pace_clear_held(fd);
    if (result == 0) pace_count_refused(t, true);
    if (result >= 0) return result;
  }
  if (!must_not_wait(fd, dontwait, cuttable)) return kPaceBlocking;
  const BucketParams& p = t.params;
  int64_t credit = t_thread.credit[t.bucket];
  uint64_t need = p.per_call ? 1 : (*cuttable && n > chunk ? chunk : n);
  uint64_t free_units = credit_refill_units(p, credit, need);
  // Bound by the bucket: what a place in its queue holds (the whole message when it
  // cannot be cut). With credit in hand a cuttable call goes with it, shortened.
  uint64_t q = pace_quantum(p);
  uint64_t want = !*cuttable && need ? need : (need && need < q ? need : q);
  uint64_t held_credit = credit > 0 ? static_cast<uint64_t>(credit) : 0;
  uint64_t queue_units = *cuttable && held_credit ? 0 : (want > held_credit ? want - held_credit : 1);
  uint64_t now = mono_ns();
  uint64_t host_now = now - offset;
  if (fleet_lapse_due(host_now)) [[unlikely]] fleet_lapse_apply();  // the next calls run at the fallback
  // A light descriptor (no place taken for a round of the queue) with a small write goes
  // ahead of the busy ones: max-min fairness gives it all it asks.
  uint64_t last = __atomic_load_n(&s->last_place[dir], __ATOMIC_RELAXED);
  BucketState& bucket = g_limiter.buckets[t.bucket];
  uint64_t tat_seen = bucket.tat_ns.load(std::memory_order_relaxed);
  uint64_t queue_ns = tat_seen > host_now ? tat_seen - host_now : 0;
  bool light = dir == kPaceWrite && need && pace_is_light(last, now, queue_ns);
  // A batch only from a full bucket (idle for a depth): a bucket in use hands out a
  // quantum at a time, so that whoever calls first does not drain the depth.
  if (tat_seen + p.depth_ns > host_now && !p.per_call) free_units = queue_units ? queue_units : 1;
  PaceAsk ask{light ? (need > held_credit ? need - held_credit : 1) : 0, free_units, queue_units};
  PaceTake pt = pace_take(bucket, p, share_pace(t), ask, host_now);  // shares: the rate, else the host's spare
  count_borrowed(t, pt);
  if (pt.due == 0) {  // it goes now (what it took is its credit; a place of none: its credit in hand)
    add_credit(t, static_cast<int64_t>(pt.units));
    return granted(t);
  }
  if (!pace_lock(*s)) {  // the slot is being changed under a signal handler: let it go
    add_credit(t, static_cast<int64_t>(pt.units));
    return granted(t);
  }
  PaceReservation& r = s->res[dir];
  __atomic_store_n(&s->last_place[dir], now, __ATOMIC_RELAXED);
  r = PaceReservation{pt.due + offset, static_cast<int64_t>(pt.units), t.view, t.gen, t.bucket, true};
  __atomic_store_n(&s->held, static_cast<uint8_t>(s->held | (1u << dir)), __ATOMIC_RELAXED);
  __atomic_store_n(&s->kick, static_cast<uint8_t>(s->kick | (1u << dir)), __ATOMIC_RELAXED);  // an edge when due
  pace_unlock(*s);
  pace_mark_held(fd);
  pace_count_refused(t, true);
  if (ProcessCounters* pc = g_limiter.counters)
    pc->held_ns[static_cast<size_t>(t.call)].fetch_add(pt.due - host_now, std::memory_order_relaxed);
  return 0;
}

void ticket_pace_next(const Ticket& t, int fd, PaceDir dir, uint64_t rest, uint64_t chunk) noexcept {
  if (t.bucket == kNoBucket) return;
  PaceSlot* s = pace_slot(fd);
  if (!s || (__atomic_load_n(&s->held, __ATOMIC_RELAXED) & (1u << dir))) return;
  // (last_place is written under the slot's lock below)
  const BucketParams& p = t.params;
  uint64_t q = pace_quantum(p);
  if (rest > chunk) rest = chunk;
  uint64_t units = p.per_call ? 1 : rest < q ? rest : q;
  if (!units) return;
  uint64_t offset = limiter_clock_offset();
  PaceShare share = share_pace(t);  // (may say once that the rule cannot share: not under the slot's lock)
  // The slot first: a place taken and not kept would have to be given back to every
  // clock pace_take charged (rate, ceiling, host).
  if (!pace_lock(*s)) return;
  uint64_t now = mono_ns();
  uint64_t host_now = now - offset;
  // A place in the rate's queue; shares: borrowed from the host if the rate has no room (due at once).
  PaceTake pt = pace_take(g_limiter.buckets[t.bucket], p, share, PaceAsk{0, units, units}, host_now);
  count_borrowed(t, pt);
  uint64_t due = pt.due;
  __atomic_store_n(&s->last_place[dir], now, __ATOMIC_RELAXED);
  s->res[dir] = PaceReservation{due ? due + offset : now, static_cast<int64_t>(pt.units), t.view, t.gen, t.bucket, true};
  __atomic_store_n(&s->held, static_cast<uint8_t>(s->held | (1u << dir)), __ATOMIC_RELAXED);
  __atomic_store_n(&s->kick, static_cast<uint8_t>(s->kick | (1u << dir)), __ATOMIC_RELAXED);
  pace_unlock(*s);
  pace_mark_held(fd);
  if (ProcessCounters* pc = g_limiter.counters; pc && due > host_now)
    pc->held_ns[static_cast<size_t>(t.call)].fetch_add(due - host_now, std::memory_order_relaxed);
}

uint64_t pace_due(int fd, PaceDir dir) noexcept {
  PaceSlot* s = pace_slot_if(fd);
  if (!s || !(__atomic_load_n(&s->held, __ATOMIC_RELAXED) & (1u << dir)) || !pace_lock(*s)) return 0;
  const PaceReservation& r = s->res[dir];
  uint64_t due = (s->held & (1u << dir)) && r.active ? r.due_mono : 0;
  pace_unlock(*s);
  return due;
}

void pace_kick(int fd, PaceDir dir) noexcept {
  PaceSlot* s = pace_slot_if(fd);  // no table yet: no registration known, nobody to kick
  if (!s || !__atomic_load_n(&s->epfd, __ATOMIC_RELAXED) || !pace_lock(*s)) return;
  __atomic_store_n(&s->kick, static_cast<uint8_t>(s->kick | (1u << dir)), __ATOMIC_RELAXED);
  pace_unlock(*s);
  pace_mark_held(fd);
}

}  // namespace bonsai
