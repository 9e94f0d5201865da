// SPDX-License-Identifier: MIT
// bonsaictl top's rows: a limit's row sums the calls it covers over the interval and
// compares them with its cap; unlimited calls that moved get rows of their own.
#include <catch2/catch.hpp>

#include "stat/top_view.h"
#include "abi/limit_parse.h"

using namespace bonsai;
using namespace bonsai::ctl;

TEST_CASE("top: a limit's row is the rate of its calls against the cap") {
  ServiceStat prev, cur;
  prev.service = cur.service = "web";
  ParseError err;
  REQUIRE(limit_parse("writes=4MiB/s,open=10/s", cur.limits, err));
  auto w = static_cast<size_t>(CallId::write), sf = static_cast<size_t>(CallId::sendfile),
       r = static_cast<size_t>(CallId::read);
  cur.total[w] = CallStat{100, 3u << 20, 50, 500'000'000};
  cur.total[sf] = CallStat{10, 1u << 20, 0, 0};
  cur.total[r] = CallStat{7, 7000, 0, 0};
  cur.interval_s = 2.0;
  cur.processes.resize(2);
  auto rows = top_rows(prev, cur);
  REQUIRE(rows.size() == 3);  // writes=, open=, and the unlimited read
  const TopRow& writes = rows[0];
  CHECK(writes.what == "writes=4MiB/s");
  CHECK(writes.rate == Approx(2.0 * (1u << 20)));  // 4 MiB over 2 s
  CHECK(writes.cap == Approx(4.0 * (1u << 20)));
  CHECK(writes.throttled_per_s == Approx(25));
  CHECK(writes.wait_avg_ms == Approx(10));
  CHECK(writes.processes == 2);
  CHECK(rows[1].per_call);
  CHECK(rows[1].rate == 0);
  CHECK(rows[2].what == "read");
  CHECK(rows[2].cap == 0);
  top_sort(rows, TopSort::Rate);
  CHECK(rows[0].what == "writes=4MiB/s");
  std::string text = top_render(rows, 2.0, 0);
  CHECK(text.find("50%") != std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
}

TEST_CASE("top: a protected service has a row with its p99, target and the controller's decision") {
  ServiceStat prev, cur;
  prev.service = cur.service = "db";
  cur.protect.enabled = true;
  cur.protect.calls = call_bit(CallId::pread);
  cur.protect.target_ns = 2'500'000;
  cur.protect.p99_ns = 3'100'000;
  cur.protect.decision = 1;
  auto pr = static_cast<size_t>(CallId::pread);
  cur.total[pr] = CallStat{1000, 4096000, 0, 0};
  cur.interval_s = 2.0;
  auto rows = top_rows(prev, cur);  // no controller yet
  REQUIRE(rows.size() == 2);          // the protect row, and pread's own (an unlimited call that moved)
  CHECK(rows[0].what == "protect 2.50ms: NO CONTROLLER");
  CHECK(rows[1].what == "pread");
  cur.protect.controller_pid = 42;
  rows = top_rows(prev, cur);
  CHECK(rows[0].what == "protect p99 3.10/2.50ms decrease");
  CHECK(rows[0].calls_per_s == Approx(500));
}
