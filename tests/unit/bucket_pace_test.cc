// SPDX-License-Identifier: MIT
// Unit tests of the arithmetic of calls that must not wait (issue 35): a bucket's queue
// of places (bucket_take_or_queue, bucket_place_due, pace_quantum, pace_light_reach)
// under a fake clock. A simulated event loop serves N descriptors whose places come due,
// in the worst order (the same descriptor always first) and late by a random amount:
// the shares must come out even and the rate exact. Then the library's own path
// (runtime/pace.h) on real non-blocking sockets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fcntl.h>
#include <random>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "bucket/token_bucket.h"
#include "runtime/pace.h"
#include "runtime/pace_slots.h"
#include "runtime_test_util.h"
#include "sys/clock.h"
#include "token_bucket_sim.h"

using namespace bonsai;
using namespace bonsai::test;

TEST_CASE("pace: a quantum is a chunk (~8 ms of rate, at least 16 KiB), one call", "[pace]") {
  CHECK(pace_quantum(bucket_params(rule_of(4 * MiB))) == 4 * MiB / 128);
  CHECK(pace_quantum(bucket_params(rule_of(10 * KiB))) == 16384);
  CHECK(pace_quantum(bucket_params(rule_of(100, RateUnit::Calls))) == 1);
  BucketParams p = bucket_params(rule_of(MiB));
  CHECK(pace_light_reach(p) == 4 * p.depth_ns);
  CHECK(pace_light_max(p) == 16384);
  CHECK(pace_light_max(bucket_params(rule_of(100 * MiB))) == pace_quantum(bucket_params(rule_of(100 * MiB))));
}

TEST_CASE("pace: an idle bucket lets a call go; a queued one hands out places in order", "[pace]") {
  BucketParams p = bucket_params(rule_of(MiB));  // depth: 10 ms of rate, ~10 KiB
  BucketState s{};
  uint64_t now = 1'000'000'000;
  bool queued = true;
  uint64_t tat = bucket_take_or_queue(s, p, 4096, 512, now, &queued, 0, p.depth_ns);
  CHECK_FALSE(queued);
  CHECK(tat == now + bucket_cost_ns(p, 4096));
  // A queue exists (tat ahead of now): the next take is a place, due when it starts.
  tat = bucket_take_or_queue(s, p, 4096, 512, now, &queued, 0, p.depth_ns);
  CHECK(queued);
  CHECK(bucket_place_due(p, tat, 512, now) == now + bucket_cost_ns(p, 4096));
  uint64_t tat2 = bucket_take_or_queue(s, p, 4096, 512, now, &queued, 0, p.depth_ns);
  CHECK(queued);
  CHECK(bucket_place_due(p, tat2, 512, now) == tat);  // the next place starts where the last ends
  // A light write goes ahead of the queue, up to pace_light_reach of light writes.
  uint64_t before = s.tat_ns.load(std::memory_order_relaxed);
  CHECK(bucket_take_light(s, p, 512, now));
  CHECK(s.tat_ns.load(std::memory_order_relaxed) == before + bucket_cost_ns(p, 512));  // charged like any
  uint64_t light_units = 0;
  while (bucket_take_light(s, p, 512, now)) light_units += 512;
  CHECK(bucket_cost_ns(p, light_units + 512) <= pace_light_reach(p));
  CHECK(bucket_cost_ns(p, light_units + 1024) > pace_light_reach(p));
}

namespace {

// A one-thread event loop serving `n` descriptors that always want more, on a fake clock:
// each takes a place when served; when places come due the loop serves them in index
// order (the worst case for the last ones), each `lag` late. Returns units served each.
std::vector<uint64_t> simulate_loop(unsigned n, uint64_t rate, uint64_t seconds, uint64_t max_lag_ns,
                                    uint64_t* total_ns) {
  BucketParams p = bucket_params(rule_of(rate));
  BucketState s{};
  uint64_t q = pace_quantum(p);
  std::vector<uint64_t> served(n, 0), due(n, 0), last_due(n, 0);
  std::mt19937_64 rng(42);
  uint64_t t0 = 1'000'000'000, now = t0, end = t0 + seconds * 1'000'000'000;
  // Every descriptor starts with a place.
  for (unsigned i = 0; i < n; ++i) {
    bool queued;
    uint64_t tat = bucket_take_or_queue(s, p, q, q, now, &queued, 0, p.depth_ns);
    due[i] = queued ? bucket_place_due(p, tat, q, now) : 0;
    if (!queued) served[i] += q, due[i] = now;  // went at once; takes a place below
  }
  while (now < end) {
    // The loop wakes at the earliest due place (plus a lag), then serves every
    // descriptor due by then, in index order.
    uint64_t next = *std::min_element(due.begin(), due.end());
    uint64_t lag = max_lag_ns ? rng() % max_lag_ns : 0;
    now = std::max(now, next) + lag;
    for (unsigned i = 0; i < n; ++i) {
      if (due[i] > now) continue;
      served[i] += q;  // the place's units
      uint64_t tat = bucket_take(s, p, q, now);  // the next place
      uint64_t d = bucket_place_due(p, tat, q, now);
      due[i] = d ? d : now;
      now += 2'000;  // the call itself
    }
  }
  *total_ns = now - t0;
  return served;
}

}  // namespace

TEST_CASE("pace: N descriptors served in a fixed order, late, share the rate evenly", "[pace]") {
  // Woken within 0.1 ms of a place (the library's readiness calls wait to the
  // microsecond): even shares; woken up to 1 ms late (a millisecond timeout), in a fixed
  // order, the first served gain a little.
  struct Row {
    unsigned n;
    uint64_t rate, max_lag_ns;
    double quanta_apart;
  };
  for (Row r : {Row{8, 4 * MiB, 100'000, 2}, Row{40, 5'000'000, 100'000, 2}, Row{100, 10'000'000, 100'000, 2},
                Row{3, MiB, 0, 1}, Row{8, 4 * MiB, 1'000'000, 2}, Row{40, 5'000'000, 1'000'000, 2}}) {
    INFO(r.n << " descriptors at " << r.rate << " B/s, up to " << r.max_lag_ns << " ns late");
    uint64_t ns = 0;
    std::vector<uint64_t> served = simulate_loop(r.n, r.rate, 20, r.max_lag_ns, &ns);
    uint64_t lo = *std::min_element(served.begin(), served.end());
    uint64_t hi = *std::max_element(served.begin(), served.end());
    uint64_t sum = 0;
    for (uint64_t v : served) sum += v;
    double jain = 0, sq = 0;
    for (uint64_t v : served) sq += static_cast<double>(v) * static_cast<double>(v);
    jain = static_cast<double>(sum) * static_cast<double>(sum) / (r.n * sq);
    // Places are served whole: the shares may differ by a couple of quanta.
    uint64_t q = pace_quantum(bucket_params(rule_of(r.rate)));
    CHECK(hi - lo <= static_cast<uint64_t>(r.quanta_apart * static_cast<double>(q)));
    CHECK(jain > 0.999);
    // The rate: never above the cap (a depth of burst at most), and not far below it
    // (a wake-up's lateness is lost only beyond the half depth made up).
    double rate = static_cast<double>(sum) / (static_cast<double>(ns) / 1e9);
    CHECK(rate <= static_cast<double>(r.rate) * 1.005);
    CHECK(rate >= static_cast<double>(r.rate) * 0.97);
  }
}

TEST_CASE("pace: a non-blocking socket's call is granted, refused while held, granted when due", "[pace]") {
  limiter_fresh("write=1MiB/s");
  int sp[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
  REQUIRE(fcntl(sp[0], F_SETFL, O_NONBLOCK) == 0);
  Ticket t = ticket_for(CallId::write, sp[0]);
  REQUIRE(t.bucket != kNoBucket);
  t_thread.credit[t.bucket] = 0;
  bool cuttable = true;
  // An idle bucket: the call goes at once, with a quantum (32 KiB is more than the
  // 10 ms depth at 1 MiB/s: it could not go whole).
  int64_t ok = ticket_try_slow(t, sp[0], kPaceWrite, false, 32768, 65536, &cuttable);
  CHECK(static_cast<uint64_t>(ok) == pace_quantum(t.params));
  CHECK(pace_quantum(t.params) < 32768);
  t_thread.credit[t.bucket] = 0;  // as if it moved them
  // The bucket now has a queue: the next call is refused, its descriptor held.
  ok = ticket_try_slow(t, sp[0], kPaceWrite, false, 32768, 65536, &cuttable);
  CHECK(ok == 0);
  PaceSlot* s = pace_slot(sp[0]);
  REQUIRE(s);
  CHECK((s->held & (1u << kPaceWrite)));
  CHECK(ticket_try_slow(t, sp[0], kPaceWrite, false, 32768, 65536, &cuttable) == 0);  // still held
  // A light descriptor (no place taken yet) with a small write goes ahead of the queue.
  int lp[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, lp) == 0);
  t_thread.credit[t.bucket] = 0;
  CHECK(ticket_try_slow(t, lp[0], kPaceWrite, false, 1500, 65536, &cuttable) >= 1500);
  t_thread.credit[t.bucket] = 0;
  uint64_t due = s->res[kPaceWrite].due_mono;
  while (mono_ns() < due) usleep(200);
  ok = ticket_try_slow(t, sp[0], kPaceWrite, false, 32768, 65536, &cuttable);
  CHECK(ok > 0);
  CHECK(static_cast<uint64_t>(ok) <= pace_quantum(t.params));
  // A blocking descriptor is not paced: the caller waits as usual.
  t_thread.credit[t.bucket] = 0;
  CHECK(ticket_try_slow(t, sp[1], kPaceWrite, false, 32768, 65536, &cuttable) == kPaceBlocking);
  // ... unless the call says MSG_DONTWAIT.
  CHECK(ticket_try_slow(t, sp[1], kPaceWrite, true, 32768, 65536, &cuttable) >= 0);
  // A datagram socket's message is never cut.
  int dg[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0, dg) == 0);
  cuttable = true;
  ticket_try_slow(t, dg[0], kPaceWrite, false, 32768, 65536, &cuttable);
  CHECK_FALSE(cuttable);
  // A regular file's O_NONBLOCK means nothing: not paced.
  char path[] = "/tmp/bonsai_pace_XXXXXX";
  int f = mkstemp(path);
  REQUIRE(f >= 0);
  unlink(path);
  fcntl(f, F_SETFL, O_NONBLOCK);
  cuttable = true;
  CHECK(ticket_try_slow(t, f, kPaceWrite, false, 32768, 65536, &cuttable) == kPaceBlocking);
  for (int fd : {sp[0], sp[1], dg[0], dg[1], lp[0], lp[1], f}) close(fd);
  limiter_uninstall();
}
