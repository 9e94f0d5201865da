// SPDX-License-Identifier: MIT
// Supervised mode's pacing of calls on descriptors that must not wait (bonsaictl/supervisor/sv_turn.h):
// which destinations are paced, the units a call takes, one take (free, queued, light),
// and a simulated supervisor serving many threads whose calls ask different sizes:
// they take turns a quantum at a time (even shares, the rate exact), and a light
// descriptor's small write goes ahead of the queue.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

#include "supervisor/sv_turn.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::ctl;
using namespace bonsai::test;

TEST_CASE("sv_pace: only sockets, pipes and terminals in non-blocking mode (or asked not to wait) are paced",
          "[sv_pace]") {
  CHECK(sv_must_not_wait(S_IFSOCK | 0777, O_RDWR | O_NONBLOCK, false));
  CHECK(sv_must_not_wait(S_IFIFO | 0600, O_WRONLY | O_NONBLOCK, false));
  CHECK(sv_must_not_wait(S_IFCHR | 0620, O_RDWR | O_NONBLOCK, false));
  CHECK_FALSE(sv_must_not_wait(S_IFSOCK | 0777, O_RDWR, false));  // blocking: waits as before
  CHECK(sv_must_not_wait(S_IFSOCK | 0777, O_RDWR, true));         // MSG_DONTWAIT, SPLICE_F_NONBLOCK
  CHECK_FALSE(sv_must_not_wait(S_IFREG | 0644, O_WRONLY | O_NONBLOCK, true));  // means nothing for a file
  CHECK_FALSE(sv_must_not_wait(S_IFBLK | 0644, O_WRONLY | O_NONBLOCK, false));
  // On real descriptors, as the supervisor looks at a copy of the target's.
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  struct stat st{};
  REQUIRE(::fstat(sv[0], &st) == 0);
  CHECK(sv_must_not_wait(st.st_mode, ::fcntl(sv[0], F_GETFL), false));
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_CASE("sv_pace: a call the supervisor cuts takes one quantum; one it lets go whole takes all it asks",
          "[sv_pace]") {
  BucketParams slow = bucket_params(rule_of(5'000'000));  // quantum: a chunk, 36864 B (rate/128 in whole pages)
  BucketParams fast = bucket_params(rule_of(100 * MiB));
  BucketParams calls = bucket_params(rule_of(100, RateUnit::Calls));
  uint64_t q = sv_place_quantum(slow);
  REQUIRE(q == 5'000'000 / 128 / 4096 * 4096);
  CHECK(sv_pace_units(4 * MiB, true, &slow, nullptr) == q);
  CHECK(sv_pace_units(4 * MiB, true, &fast, &slow) == q);  // the smaller quantum
  CHECK(sv_pace_units(512, true, &slow, nullptr) == 512);  // asks less: takes less
  CHECK(sv_pace_units(UINT64_MAX, true, &slow, nullptr) == q);
  CHECK(sv_pace_units(64 * KiB, false, &slow, nullptr) == 64 * KiB);  // cannot be cut
  CHECK(sv_pace_units(UINT64_MAX, false, &slow, nullptr) == q);       // unknown: settled after
  CHECK(sv_pace_units(4 * MiB, true, &calls, nullptr) == 1);          // call-rate buckets only
  CHECK(sv_pace_units(4 * MiB, true, &calls, &slow) == q);
}

TEST_CASE("sv_pace: a descriptor is light after 100 ms without a place, and two lengths of its queue",
          "[sv_pace]") {
  uint64_t now = 10'000'000'000;
  CHECK(sv_pace_light(0, now, 0));  // never placed: a new connection
  CHECK(sv_pace_light(0, now, 500'000'000));
  CHECK_FALSE(sv_pace_light(now - 50'000'000, now, 0));  // a busy stream
  CHECK(sv_pace_light(now - 150'000'000, now, 20'000'000));
  // A queue of 100 streams' places, 200 ms long: a busy one places every 200 ms and is
  // never light, so its small writes do not jump the queue each round.
  CHECK_FALSE(sv_pace_light(now - 200'000'000, now, 200'000'000));
  CHECK(sv_pace_light(now - 500'000'000, now, 200'000'000));
  BucketParams p = bucket_params(rule_of(5'000'000));
  CHECK(sv_place_quantum(p) == pace_quantum(p));
  CHECK(sv_place_quantum(bucket_params(rule_of(100, RateUnit::Calls))) == 1);
  CHECK(sv_place_quantum(bucket_params(rule_of(64ull * 1024 * MiB))) == kSvReserveMax);
}

TEST_CASE("sv_pace: an idle bucket lets a call go; a busy one gives places in order; a light write goes ahead",
          "[sv_pace]") {
  BucketParams p = bucket_params(rule_of(5'000'000));
  uint64_t q = sv_place_quantum(p);
  BucketState s{};
  uint64_t now = 1'000'000'000;
  SvPlace a = sv_pace_take(s, p, 4 * MiB, q, q, false, now);
  CHECK_FALSE(a.queued);
  CHECK(a.due == 0);
  CHECK(a.units == q);  // from an idle bucket too: one quantum, not the whole call
  SvPlace b = sv_pace_take(s, p, 4 * MiB, q, q, false, now);
  CHECK(b.queued);
  CHECK(b.units == q);
  CHECK(b.due == now + bucket_cost_ns(p, q));  // starts where the last one ends
  SvPlace c = sv_pace_take(s, p, 4 * MiB, q, q, false, now);
  CHECK(c.due == b.due + bucket_cost_ns(p, q));
  // A light descriptor's small write (a response with its headers) goes now, whole, past
  // the queue; the queue behind it waits that much longer.
  SvPlace l = sv_pace_take(s, p, 700, 700, q, true, now);
  CHECK_FALSE(l.queued);
  CHECK(l.units == 700);
  SvPlace d = sv_pace_take(s, p, 4 * MiB, q, q, false, now);
  CHECK(d.due == c.due + bucket_cost_ns(p, q) + bucket_cost_ns(p, 700));
  // Not light: a large write, or light writes beyond the light clock's reach.
  CHECK(sv_pace_take(s, p, pace_light_max(p) + 1, q, q, true, now).queued);
  s.light_tat_ns.store(now + pace_light_reach(p), std::memory_order_relaxed);
  CHECK(sv_pace_take(s, p, 700, 700, q, true, now).queued);
  // A call-rate bucket: one unit a call.
  BucketParams cp = bucket_params(rule_of(1000, RateUnit::Calls));
  BucketState cs{};
  CHECK(sv_pace_take(cs, cp, 4 * MiB, q, q, false, now).units == 1);
}

namespace {

// A supervisor serving `sizes.size()` threads, one per descriptor, each asking `sizes[i]`
// a call (cuttable, as an emulated sendfile) and calling again `turn_ns` after its call
// was made: each call takes a place; the loop wakes when a place is due (up to
// `max_lag_ns` late) and makes every due call, in index order (the worst order). Every
// `light_every_ns` a light descriptor makes a 700-byte write; its largest delay is
// returned in `*light_wait`. Returns bytes moved per thread.
std::vector<uint64_t> simulate_supervisor(const std::vector<uint64_t>& sizes, uint64_t rate, uint64_t seconds,
                                          uint64_t max_lag_ns, uint64_t turn_ns, uint64_t light_every_ns,
                                          uint64_t* total_ns, uint64_t* light_wait) {
  BucketParams p = bucket_params(rule_of(rate));
  BucketState s{};
  size_t n = sizes.size();
  std::vector<uint64_t> moved(n, 0), due(n, 0), units(n, 0);
  std::mt19937_64 rng(7);
  uint64_t t0 = 1'000'000'000, now = t0, end = t0 + seconds * 1'000'000'000, next_light = t0 + light_every_ns;
  *light_wait = 0;
  std::vector<uint64_t> credit(n, 0);
  auto take = [&](size_t i) {
    SvTurn t = sv_pace_turn(s, p, sizes[i], true, false, credit[i], now);
    units[i] = t.moves;
    due[i] = t.due ? t.due : now;
  };
  for (size_t i = 0; i < n; ++i) take(i);
  while (now < end) {
    uint64_t next = *std::min_element(due.begin(), due.end());
    if (light_every_ns) next = std::min(next, next_light);
    uint64_t lag = max_lag_ns ? rng() % max_lag_ns : 0;
    now = std::max(now, next) + lag;
    if (light_every_ns && now >= next_light) {
      SvPlace pl = sv_pace_take(s, p, 700, 700, sv_place_quantum(p), true, now);
      uint64_t at = pl.due ? pl.due : now;
      *light_wait = std::max(*light_wait, at - next_light);
      next_light += light_every_ns;
    }
    for (size_t i = 0; i < n; ++i) {
      if (due[i] > now) continue;
      moved[i] += units[i];
      now += 20'000;  // the call, made by the supervisor
      uint64_t back = now;
      now += turn_ns;  // the thread's turn around to its next call
      take(i);
      now = back;
    }
  }
  *total_ns = now - t0;
  return moved;
}

double jain(const std::vector<uint64_t>& v) {
  double sum = 0, sq = 0;
  for (uint64_t x : v) sum += static_cast<double>(x), sq += static_cast<double>(x) * static_cast<double>(x);
  return sum * sum / (static_cast<double>(v.size()) * sq);
}

}  // namespace

TEST_CASE("sv_pace: a turn is a whole place; a call smaller than it keeps the rest as credit", "[sv_pace]") {
  BucketParams p = bucket_params(rule_of(5'000'000));
  uint64_t q = sv_place_quantum(p);
  BucketState s{};
  uint64_t now = 1'000'000'000;
  s.tat_ns.store(now + 20'000'000, std::memory_order_relaxed);  // a queue of 20 ms
  uint64_t credit = 0;
  SvTurn t = sv_pace_turn(s, p, 3000, true, false, credit, now);  // a 3000-byte sendfile
  CHECK(t.queued);
  CHECK(t.due == now + 20'000'000);
  CHECK(t.moves == 3000);
  CHECK(credit == q - 3000);
  // The next calls go now on the credit, the last one cut to what is left.
  t = sv_pace_turn(s, p, 3000, true, false, credit, now);
  CHECK((t.moves == 3000 && t.due == 0 && !t.queued));
  uint64_t left = credit;
  t = sv_pace_turn(s, p, 1 << 20, true, false, credit, now);
  CHECK((t.moves == left && t.due == 0 && credit == 0));
  // A call not cuttable larger than the credit: takes what is missing, all it asks.
  credit = 1000;
  t = sv_pace_turn(s, p, 64 * KiB, false, false, credit, now);
  CHECK(t.queued);
  CHECK(t.moves == 64 * KiB);
  CHECK(credit == 0);
  // An idle bucket: no place, no credit kept.
  BucketState idle{};
  t = sv_pace_turn(idle, p, 3000, true, false, credit, now);
  CHECK((!t.queued && t.due == 0 && t.moves == 3000 && credit == 0));
}

TEST_CASE("sv_pace: threads whose calls ask 4 MiB, 64 KiB or 3 KiB take turns: even shares, the rate exact",
          "[sv_pace]") {
  std::vector<uint64_t> sizes;
  for (int i = 0; i < 40; ++i) sizes.push_back(i % 3 == 0 ? 4 * MiB : i % 3 == 1 ? 64 * KiB : 3 * KiB);
  uint64_t ns = 0, light_wait = 0;
  uint64_t rate = 5'000'000;
  std::vector<uint64_t> moved = simulate_supervisor(sizes, rate, 20, 100'000, 50'000, 0, &ns, &light_wait);
  uint64_t lo = *std::min_element(moved.begin(), moved.end());
  uint64_t hi = *std::max_element(moved.begin(), moved.end());
  uint64_t sum = 0;
  for (uint64_t v : moved) sum += v;
  double achieved = static_cast<double>(sum) * 1e9 / static_cast<double>(ns);
  INFO("min " << lo << " max " << hi << " rate " << achieved << " Jain " << jain(moved));
  CHECK(static_cast<double>(lo) / static_cast<double>(hi) >= 0.97);
  CHECK(jain(moved) >= 0.999);
  CHECK(achieved <= rate * 1.01);
  CHECK(achieved >= rate * 0.99);
}

TEST_CASE("sv_pace: a light descriptor's small write goes ahead of 40 busy ones", "[sv_pace]") {
  std::vector<uint64_t> sizes(40, 4 * MiB);
  uint64_t ns = 0, light_wait = 0;
  std::vector<uint64_t> moved = simulate_supervisor(sizes, 5'000'000, 5, 100'000, 50'000, 200'000'000, &ns,
                                                    &light_wait);
  // A round of the queue is 40 quanta (20 ms): the light write does not wait for it.
  CHECK(light_wait <= 1'000'000);
  CHECK(jain(moved) >= 0.999);
}

TEST_CASE("sv_pace: under shares a turn the rate cannot give within its depth is lent by the host", "[sv_pace]") {
  Rule r = rule_of(5'000'000);
  r.ceil = 20'000'000;
  r.host1 = 1;
  ShareParams sp{};
  REQUIRE(share_params(r, rule_of(100'000'000), sp));
  const BucketParams& p = sp.rate;
  uint64_t q = sv_place_quantum(p);  // 39,062 bytes: 7.8 ms of rate, the depth 10 ms
  uint64_t now = 1'000'000'000;
  BucketState own{}, host{};
  own.tat_ns.store(now + 5'000'000, std::memory_order_relaxed);  // a whole turn would end past the depth
  uint64_t credit = 0;
  SvTurn t = sv_pace_turn(own, p, 3000, true, false, credit, now, {&host, &sp});
  CHECK((t.moves == 3000 && t.due == 0 && !t.queued));
  CHECK(t.borrowed == q);  // a whole turn, as a place would be: the credit keeps the rest
  CHECK(credit == q - 3000);
  CHECK(own.tat_ns.load() == now + 5'000'000);  // the rate is untouched
  CHECK(host.tat_ns.load() == now + bucket_cost_ns(sp.host, q));
  // With 2 ms of queue a turn fits: the rate gives it, in its queue's order, and the host
  // and the ceiling see it as it is taken.
  BucketState own2{}, host2{};
  own2.tat_ns.store(now + 2'000'000, std::memory_order_relaxed);
  credit = 0;
  t = sv_pace_turn(own2, p, 3000, true, false, credit, now, {&host2, &sp});
  CHECK((t.queued && t.due == now + 2'000'000 && t.borrowed == 0));
  CHECK(host2.tat_ns.load() == now + bucket_cost_ns(sp.host, q));
  CHECK(own2.ceil_tat_ns.load() == now + bucket_cost_ns(sp.ceil, q));
  // Its next calls go on the credit: nothing more charged.
  t = sv_pace_turn(own2, p, 3000, true, false, credit, now, {&host2, &sp});
  CHECK((t.moves == 3000 && t.due == 0));
  CHECK(host2.tat_ns.load() == now + bucket_cost_ns(sp.host, q));
}
