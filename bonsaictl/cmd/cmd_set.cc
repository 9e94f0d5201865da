// SPDX-License-Identifier: MIT
// `bonsaictl set [--merge] [--wait[=MS]] SERVICE LIMIT...`: change a running
// service's limits (BONSAI_LIMITS grammar); attached processes apply the change on
// their next call. --wait reports when no attached process still sleeps in a wait
// under the old limits (the others apply them on their next call). `--stdin`: one
// process for a controller's stream of changes, a limit list per line.
#include <algorithm>
#include <chrono>
#include <fmt/core.h>
#include <iostream>
#include <memory>
#include <thread>

#include "abi/limit_parse.h"
#include "segment/host_client.h"
#include "segment/proc_table.h"
#include "cmd/commands.h"
#include "config/limits_merge.h"
#include "config/shares_trusted.h"
#include "shm/shm_proc.h"
#include "shm/shm_slots.h"
#include "segment/shm_client.h"
#include "stat/stat_snapshot.h"
#include "sys/clock.h"

namespace bonsai::ctl {
namespace {

constexpr long kWaitMaxMs = 3'600'000;

// "--wait=MS": a whole number of milliseconds, 0..kWaitMaxMs.
long wait_parse(const std::string& v) {
  bool digits = !v.empty() && v.size() <= 7;
  for (char c : v) digits = digits && c >= '0' && c <= '9';
  long ms = digits ? std::stol(v) : -1;
  if (ms < 0 || ms > kWaitMaxMs)
    usage_error(fmt::format("bad --wait '{}' (milliseconds, 0 to {})", v, kWaitMaxMs));
  return ms;
}

struct WaitResult {
  unsigned live = 0;       // processes attached and alive
  unsigned installed = 0;  // have installed the new limits
  unsigned behind = 0;     // asleep in a wait under the old limits
  std::vector<int> behind_pids;
  double ms = 0;
};

// Waits until no live process sleeps in a wait under limits older than `seq`. A
// process not inside a wait takes the new limits on its next call by construction
// (each call compares the sequence number), so only the sleepers matter; the change
// wakes their waits (a futex on the sequence number: runtime/wait.h), and a thread
// cancelled in a wait leaves the count. Dead processes' slots are reclaimed on the way.
WaitResult wait_applied(Segment& handle, uint64_t seq, uint64_t timeout_ms) {
  ShmSegment& seg = handle.seg();
  uint64_t t0 = mono_ns(), last_read = 0;
  std::unique_ptr<ProcTable> procs;
  for (;;) {
    WaitResult r;
    // The processes, read again every 100 ms: one pass over /proc for every slot.
    uint64_t now = mono_ns();
    bool reclaim = !procs || now - last_read > 100'000'000;
    if (reclaim) procs = std::make_unique<ProcTable>(), last_read = now;
    handle.guarded([&] {
      if (reclaim) slots_reclaim(seg, procs->slot_judge());  // a dead container is not behind
      unsigned end = slots_scan_end(seg);
      for (unsigned i = 0; i < end; ++i) {
        const ShmSlot& s = seg.slots[i];
        if (s.state.load(std::memory_order_acquire) != static_cast<uint32_t>(SlotState::Live)) continue;
        ++r.live;
        if (s.seen_seq.load(std::memory_order_acquire) >= seq) {
          ++r.installed;
        } else if (s.waiting.load(std::memory_order_acquire) > 0) {
          ++r.behind;
          // A container's process by our pid for it; its own pid if we cannot see it.
          int pid = s.pid.load(std::memory_order_relaxed), here = 0;
          if (procs->judge(seg.slot_ns.pid_ns[i].load(std::memory_order_relaxed), pid,
                           s.start_time.load(std::memory_order_relaxed), here) == SlotProc::Alive)
            pid = here;
          r.behind_pids.push_back(pid);
        }
      }
    });
    r.ms = static_cast<double>(mono_ns() - t0) / 1e6;
    if (!r.behind || r.ms >= static_cast<double>(timeout_ms)) return r;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Parses `text` (a LIMIT list, or "none"). @return false with `why` set.
bool parse_text(const std::string& text, LimitSet& set, std::string& why) {
  set = LimitSet{};
  if (text == "none") return true;
  ParseError err;
  if (limit_parse(text, set, err)) return true;
  why = fmt::format("{}\n  {}\n  {}^", err.message, text, std::string(err.offset, ' '));
  return false;
}

// The rules of `set` in the limit language ("none" without any): what a service runs under.
std::string set_text(const LimitSet& set) {
  std::string out;
  for (uint32_t r = 0; r < set.count && r < kMaxRules; ++r) {
    char buf[256];
    rule_format(set.rules[r], buf, sizeof buf);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out.empty() ? "none" : out;
}

// Applies `set` (merged into the current rules with --merge) once it passes what `check`
// asks of a file, against the trusted copy of the host capacity and of the other
// services' rules (config/shares_trusted.h), never the host segment: a refusal is a
// usage error and changes nothing. @return the new sequence; `result` the rules now in force.
uint64_t apply(Segment& seg, LimitSet set, bool merge, LimitSet& result) {
  if (merge) {
    uint64_t cur_seq;
    LimitSet current = limits_read_checked(seg, cur_seq);  // never trust the count read
    std::string why;
    if (!limits_merge(current, set, why)) refused_error(fmt::format("set --merge: {}; nothing was changed", why));
    set = current;
  }
  SharesTrusted trusted;
  std::string why;
  int have = shares_trusted_read(trusted, why);
  if (have < 0) runtime_error(fmt::format("cannot check the host capacity: {}; nothing was changed", why));
  LimitSet host_cap{};
  if (!trusted.has_capacity && host_read(host_cap) && host_cap.count)
    fmt::print(stderr, "bonsaictl set: NOTE: the host capacity was installed by an older bonsai and has no trusted "
                       "copy: the rates are not checked against it (bonsaictl load its file again)\n");
  else if (std::string p = shares_trusted_problem(trusted, seg.service(), set); !p.empty())
    refused_error(fmt::format("{} (as `check` refuses it in a file); nothing was changed", p));
  if (host_resolve(set))  // shares: `:ceil=` borrows from the installed host capacity
    fmt::print(stderr, "bonsaictl set: WARNING: a ceil has no host capacity over its calls (bonsaictl load a "
                       "file with 'host: capacity:'): held to its rate\n");
  uint64_t seq = seg.write_limits(set);
  result = set;
  if (have > 0 || trusted.has_capacity) {
    trusted.services[seg.service()] = set;
    if (std::string w = shares_trusted_write(trusted); !w.empty())
      fmt::print(stderr, "bonsaictl set: WARNING: the trusted copy of the shares is not updated: {}\n", w);
  }
  return seq;
}

// --stdin: a limit list per line, each applied as it comes (a controller retuning rates
// many times a second pays one process start, not one per change). A bad line is
// reported with its line and column and changes nothing; the others still apply.
int set_from_stdin(const std::string& service, bool merge) {
  auto seg = Segment::open(service, false);
  seg->check();
  std::string line;
  int bad = 0;
  for (unsigned n = 1; std::getline(std::cin, line); ++n) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    LimitSet set{}, result{};
    ParseError err;
    if (line != "none" && !limit_parse(line, set, err)) {
      fmt::print(stderr, "stdin:{}:{}: {}\n", n, err.offset + 1, err.message);
      ++bad;
      continue;
    }
    uint64_t seq = 0;
    try {
      seq = apply(*seg, set, merge, result);
    } catch (const CtlError& e) {
      if (e.code != kExitUsage) throw;
      fmt::print(stderr, "stdin:{}:1: {}\n", n, e.what());
      ++bad;
      continue;
    }
    fmt::print("{}: limits #{}: {}\n", service, seq, set_text(result));
    std::fflush(stdout);
  }
  return bad ? kExitUsage : kExitOk;
}

constexpr CliOption kOptions[] = {
    {"--merge", OptArg::None, {},
     "add the new rules to those in force: an old rule keeps the calls and\n"
     "descriptor kinds no new rule names (refused when that is not one rule)"},
    {"--wait", OptArg::Optional, "MS",
     "wait (default 1000 ms, at most 3600000) until no attached process is\n"
     "asleep under the old limits: the others apply them on their next call;\n"
     "--wait MS takes a whole number after it as MS"},
    {"--stdin", OptArg::None, {},
     "apply a LIMIT list (or 'none') per line of standard input, each as it\n"
     "comes: for controllers retuning rates many times a second (a bad line\n"
     "is reported as stdin:LINE:COL and changes nothing)"},
};

int cmd_set(const Args& args) {
  CliParsed p = options_parse(args, kOptions);
  bool merge = p.has("--merge"), from_stdin = p.has("--stdin");
  long wait_ms = -1;
  if (p.has("--wait")) {
    std::string v = p.value("--wait");
    wait_ms = v.empty() && std::find(args.begin(), args.end(), "--wait=") == args.end() ? 1000 : wait_parse(v);
  }
  std::vector<std::string> rest = p.words;
  rest.insert(rest.end(), p.rest.begin(), p.rest.end());
  if (from_stdin) {
    if (rest.size() != 1) usage_error("set --stdin takes SERVICE only (the limits come from standard input)");
    if (wait_ms >= 0) usage_error("set --stdin does not --wait");
    return set_from_stdin(rest[0], merge);
  }
  if (rest.size() < 2) usage_error("set needs SERVICE and at least one LIMIT (or 'none')");
  std::string text;
  for (size_t i = 1; i < rest.size(); ++i) text += (text.empty() ? "" : ",") + rest[i];
  LimitSet set{};
  std::string why;
  if (!parse_text(text, set, why)) usage_error(why);
  auto seg = Segment::open(rest[0], false);
  seg->check();
  LimitSet result{};
  uint64_t seq = apply(*seg, set, merge, result);
  fmt::print("{}: limits #{}: {}\n", rest[0], seq, set_text(result));  // what the service now runs under
  if (wait_ms < 0) return kExitOk;
  std::fflush(stdout);
  WaitResult r = wait_applied(*seg, seq, static_cast<uint64_t>(wait_ms));
  if (r.behind) {
    std::string pids;
    for (size_t i = 0; i < r.behind_pids.size() && i < 10; ++i) pids += fmt::format("{}{}", i ? " " : "", r.behind_pids[i]);
    fmt::print(stderr,
               "{}: {} of {} process{} still asleep under the old limits after {:.0f} ms (pid {}{}); they apply "
               "limits #{} when that wait ends\n",
               rest[0], r.behind, r.live, r.live == 1 ? "" : "es", r.ms, pids, r.behind > 10 ? " ..." : "", seq);
    return kExitRuntime;
  }
  unsigned idle = r.live - r.installed;
  fmt::print("{}: applied by {} process{} in {:.3f} ms{}\n", rest[0], r.live, r.live == 1 ? "" : "es", r.ms,
             idle ? fmt::format(" ({} idle: {} on {} next call)", idle, idle == 1 ? "it applies them" : "they apply them",
                                idle == 1 ? "its" : "their")
                  : "");
  return kExitOk;
}

}  // namespace

extern const Command kCmdSet{
    "set", "set [--merge] [--wait[=MS]] SERVICE LIMIT... | none\n       set [--merge] --stdin SERVICE",
    "Replaces SERVICE's limits while it runs. LIMIT uses the BONSAI_LIMITS grammar,\n"
    "e.g. 'read+pread=10MiB/s' 'writes=8MB/s:burst=256KiB:fd=socket' 'openat=200/s';\n"
    "several LIMITs are joined with ','. 'none' removes every limit (accounting goes on).\n"
    "Prints the limits the service then runs under. Refuses (exit 2, nothing changed)\n"
    "what `check` refuses in a file, the host capacity of `load` included.\n",
    kOptions,
    "exit status: 0 set (and applied), 1 no such service, damaged segment or not applied\n"
    "in time, 2 bad LIMIT or option, or limits `check` would refuse\n",
    cmd_set};

}  // namespace bonsai::ctl
