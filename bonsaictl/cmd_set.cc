// SPDX-License-Identifier: MIT
// `bonsaictl set [--merge] [--wait[=MS]] SERVICE LIMIT...`: change a running
// service's limits (BONSAI_LIMITS grammar); attached processes apply the change on
// their next call. --wait reports when every attached process has applied it.
#include <fmt/core.h>
#include <thread>

#include "abi/limit_parse.h"
#include "commands.h"
#include "run_env.h"
#include "runtime/clock.h"
#include "shm/seqlock.h"
#include "shm_client.h"

namespace bonsai::ctl {
namespace {

// Waits until every live slot has installed `seq`. @return processes still behind.
unsigned wait_applied(ShmSegment& seg, uint64_t seq, uint64_t timeout_ms, unsigned& live, double& ms) {
  uint64_t t0 = mono_ns();
  for (;;) {
    unsigned behind = 0;
    live = 0;
    for (const auto& s : seg.slots) {
      if (s.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live)) continue;
      ++live;
      if (s.seen_seq.load(std::memory_order_acquire) < seq) ++behind;
    }
    ms = static_cast<double>(mono_ns() - t0) / 1e6;
    if (!behind || ms >= static_cast<double>(timeout_ms)) return behind;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

int cmd_set(const Args& args) {
  bool merge = false;
  long wait_ms = -1;
  std::vector<std::string> rest;
  for (const auto& a : args) {
    if (a == "--merge") merge = true;
    else if (a == "--wait") wait_ms = 1000;
    else if (a.rfind("--wait=", 0) == 0) wait_ms = std::atol(a.c_str() + 7);
    else if (a.size() > 1 && a[0] == '-' && rest.size() < 1) usage_error(fmt::format("unknown option '{}'", a));
    else rest.push_back(a);
  }
  if (rest.size() < 2) usage_error("set needs SERVICE and at least one LIMIT (or 'none')");
  std::string text;
  for (size_t i = 1; i < rest.size(); ++i) text += (text.empty() ? "" : ",") + rest[i];
  LimitSet set{};
  if (text != "none") {
    ParseError err;
    if (!limit_parse(text, set, err))
      usage_error(fmt::format("{}\n  {}\n  {}^", err.message, text, std::string(err.offset, ' ')));
  }
  auto seg = Segment::open(rest[0], false);
  if (merge) {
    LimitSet current{};
    uint64_t cur_seq;
    if (!seqlock_read(seg->seg().limits, current, cur_seq, 100000)) runtime_error("limits are being rewritten; try again");
    std::string why;
    if (!limits_merge(current, set, why)) usage_error(why);
    set = current;
  }
  uint64_t seq = seg->write_limits(set);
  fmt::print("{}: limits #{}: {}\n", rest[0], seq, set.count ? text : "none");
  if (wait_ms < 0) return kExitOk;
  unsigned live = 0;
  double ms = 0;
  unsigned behind = wait_applied(seg->seg(), seq, static_cast<uint64_t>(wait_ms), live, ms);
  if (behind) {
    fmt::print(stderr, "{}: {} of {} processes have not applied limits #{} after {:.0f} ms (they do on their next call)\n",
               rest[0], behind, live, seq, ms);
    return kExitRuntime;
  }
  fmt::print("{}: applied by {} process{} in {:.3f} ms\n", rest[0], live, live == 1 ? "" : "es", ms);
  return kExitOk;
}

}  // namespace

extern const Command kCmdSet{
    "set", "set [--merge] [--wait[=MS]] SERVICE LIMIT... | none",
    "Replaces SERVICE's limits while it runs. LIMIT uses the BONSAI_LIMITS grammar,\n"
    "e.g. 'read+pread=10MiB/s' 'writes=8MB/s:burst=256KiB:fd=socket' 'openat=200/s';\n"
    "several LIMITs are joined with ','. 'none' removes every limit (accounting goes on).\n"
    "  --merge     keep the current rules that share no call with the new ones\n"
    "  --wait[=MS] wait (default 1000 ms) until every attached process applied the change\n"
    "exit status: 0 set (and applied), 1 no such service or not applied in time, 2 bad LIMIT\n",
    cmd_set};

}  // namespace bonsai::ctl
