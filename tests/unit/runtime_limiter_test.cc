// SPDX-License-Identifier: MIT
// Unit tests of libbonsai/runtime/limiter: the Ticket API on this process's own buckets
// (a bucket per rule, prepaid credit, charging), installs that keep state (a rate-only
// change keeps the thread's credit and the bucket's debt; renumbered rules drop the
// credit, never charge it twice), and views read by generation: readers holding tickets
// while another thread installs thousands of views never see a torn bucket (run under
// TSan by `make test`).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "runtime/ticket.h"
#include "runtime/ticket_pay.h"

#include "runtime_test_util.h"

using namespace bonsai;
using namespace bonsai::test;

TEST_CASE("runtime_limiter: a ticket finds its bucket and copies its parameters", "[runtime_limiter]") {
  limiter_fresh("read=1MiB/s,write=2MiB/s,openat=100/s");
  Ticket w = ticket_for(CallId::write, -1);
  REQUIRE(w.bucket == 1);
  CHECK(w.view == g_limiter.view.load());
  CHECK(w.gen == g_limiter.view.load()->gen);
  CHECK(w.gen % 2 == 0);
  CHECK(w.params.ns_per_unit_q32 == bucket_params(limits_of("write=2MiB/s").rules[0]).ns_per_unit_q32);
  CHECK(ticket_chunk(w) == static_cast<size_t>(w.params.chunk));
  Ticket o = ticket_for(CallId::openat, -1);
  CHECK(o.bucket == 2);
  CHECK(o.params.per_call);
  Ticket s = ticket_for(CallId::send, 3);
  CHECK(s.bucket == kNoBucket);
  CHECK(ticket_chunk(s) == SIZE_MAX);
}

TEST_CASE("runtime_limiter: a write prepays from the bucket, its credit spent by the charge", "[runtime_limiter]") {
  limiter_fresh("write=1GB/s");  // 1 ns a byte: takes without sleeping
  Ticket t = ticket_for(CallId::write, -1);
  REQUIRE(t.bucket == 0);
  uint64_t tat0 = g_limiter.buckets[0].tat_ns.load();
  ticket_wait(t, false, 100'000);
  int64_t credit = t_thread.credit[0];
  CHECK(credit >= 100'000);  // what it needs plus a batch
  CHECK(g_limiter.buckets[0].tat_ns.load() > tat0);
  ticket_charge(t, 100'000);
  CHECK(t_thread.credit[0] == credit - 100'000);
  // A read beyond the credit is settled at once, late.
  ticket_charge(t, 10'000'000);
  CHECK(t_thread.credit[0] == 0);
  CHECK(g_limiter.buckets[0].late_ns.load() > 0);
}

TEST_CASE("runtime_limiter: a rate-only install keeps credit and debt; new rules drop the credit",
          "[runtime_limiter]") {
  limiter_fresh("write=1GB/s,read=1GB/s");
  Ticket t = ticket_for(CallId::write, -1);
  ticket_wait(t, false, 50'000);
  int64_t credit = t_thread.credit[0];
  REQUIRE(credit > 0);
  uint64_t gen = t.gen;
  // The same rules, new rates: the thread keeps what it paid for.
  REQUIRE(limiter_install(limits_of("write=2GB/s,read=1GB/s")));
  Ticket u = ticket_for(CallId::write, -1);
  CHECK(u.gen > gen);
  CHECK(u.bucket == 0);
  CHECK(t_thread.credit_gen == u.gen);
  CHECK(t_thread.credit[0] == credit);
  // The same limits again: nothing moves.
  uint64_t tat = g_limiter.buckets[0].tat_ns.load();
  REQUIRE(limiter_install(limits_of("write=2GB/s,read=1GB/s")));
  (void)ticket_for(CallId::write, -1);
  CHECK(t_thread.credit[0] == credit);
  CHECK(g_limiter.buckets[0].tat_ns.load() == tat);
  // Renumbered: the credit is dropped (never spent twice), the bucket follows its rule.
  REQUIRE(limiter_install(limits_of("read=1GB/s,write=2GB/s")));
  Ticket v = ticket_for(CallId::write, -1);
  CHECK(v.bucket == 1);
  CHECK(t_thread.credit[1] == 0);
  CHECK(g_limiter.buckets[1].tat_ns.load() == tat);
  // The ticket made before: charged from its own copy of the parameters, not the slot's.
  ticket_charge(t, 1000);
}

TEST_CASE("runtime_limiter: readers never see a torn view while views are installed", "[runtime_limiter]") {
  limiter_fresh("write=1GB/s,read=100MB/s");
  // Writes always get one of these rates, reads the others, in either rule order.
  const char* sets[] = {"write=1GB/s,read=100MB/s", "read=200MB/s,write=2GB/s", "write=3GB/s,read=300MB/s",
                        "read=400MB/s,write=4GB/s"};
  std::vector<uint64_t> write_rates, read_rates;
  for (const char* s : sets) {
    LimitSet set = limits_of(s);
    for (uint32_t r = 0; r < set.count; ++r) {
      uint64_t q = bucket_params(set.rules[r]).ns_per_unit_q32;
      (set.rules[r].calls == call_bit(CallId::write) ? write_rates : read_rates).push_back(q);
    }
  }
  auto is_in = [](const std::vector<uint64_t>& v, uint64_t q) { return std::find(v.begin(), v.end(), q) != v.end(); };
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, unread{0};
  std::atomic<long> reads{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i)
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        Ticket w = ticket_for(CallId::write, -1);
        Ticket r = ticket_for(CallId::read, -1);
        // No consistent read in a few tries (fail open: unlimited) is allowed, wrong numbers not.
        for (const Ticket* t : {&w, &r}) {
          if (t->bucket == kNoBucket) unread.fetch_add(1);
          else if (t->bucket > 1 || !is_in(t == &w ? write_rates : read_rates, t->params.ns_per_unit_q32))
            torn.fetch_add(1);
        }
        ticket_wait(w, false, 4096);
        ticket_charge(w, 4096);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  int installs = 0;
  for (; installs < 20'000; ++installs) REQUIRE(limiter_install(limits_of(sets[installs % 4])));
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(torn.load() == 0);
  CHECK(reads.load() > 0);
  CHECK(unread.load() < reads.load() / 10);
  WARN("installs " << installs << ", reader rounds " << reads.load() << ", reads given up " << unread.load());
}

// What an install costs the library (bench/scenarios/ctl_churn.sh prints it): a rate-only update
// (the same rules: the table is kept) and a renumbering one, ns each.
TEST_CASE("runtime_limiter: install cost", "[.bench][runtime_limiter_bench]") {
  limiter_fresh("write=1GB/s,read=100MB/s,openat=100/s");
  LimitSet a = limits_of("write=1GB/s,read=100MB/s,openat=100/s");
  LimitSet b = limits_of("write=2GB/s,read=200MB/s,openat=200/s");
  LimitSet c = limits_of("openat=200/s,read=200MB/s,write=2GB/s");
  constexpr int kN = 20'000;
  auto per_install = [&](const LimitSet& x, const LimitSet& y) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i) REQUIRE(limiter_install(i % 2 ? x : y));
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kN;
  };
  double rate_only = per_install(a, b);
  double renumbered = per_install(a, c);
  std::printf("install_ns rate_only=%.0f renumbered=%.0f\n", rate_only, renumbered);
  CHECK(rate_only > 0);
}
