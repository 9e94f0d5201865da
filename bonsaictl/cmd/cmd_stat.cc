// SPDX-License-Identifier: MIT
// `bonsaictl stat [SERVICE...] [--json] [--watch SECS] [--count N]`: per service, per
// attached process and in total, per call: calls, bytes, throttled, wait_ns; with
// --watch, rates over each interval. JSON: one document per service per line.
#include <chrono>
#include <cstdlib>
#include <fmt/core.h>
#include <memory>
#include <thread>
#include <unistd.h>

#include "cmd/commands.h"
#include "fleet/fleet_view.h"
#include "segment/shm_client.h"
#include "stat/stat_format.h"
#include "stat/stat_prometheus.h"
#include "stat/stat_snapshot.h"

namespace bonsai::ctl {
namespace {

struct StatOptions {
  std::vector<std::string> services;
  bool json = false;
  bool prometheus = false;
  int pid = 0;  // --pid: which service this process is attached to
  std::string fleet;  // --fleet SERVICE: the fleet view from the store
  double watch_s = 0;
  long count = -1;  // intervals to print with --watch; -1: until interrupted
};

constexpr CliOption kOptions[] = {
    {"--json", OptArg::None, {}, "one JSON document per service per line (docs/reference/stat-json.md)"},
    {"--prometheus", OptArg::None, {},
     "the Prometheus text format, for node_exporter's textfile collector\n(docs/reference/metrics.md)"},
    {"--pid", OptArg::Required, "PID", "the service process PID is attached to, and its counters"},
    {"-w, --watch", OptArg::Required, "SECS", "print again every SECS with rates over the interval"},
    {"-n, --count", OptArg::Required, "N", "with --watch: stop after N intervals (without --watch: refused)"},
    {"--fleet", OptArg::Required, "SERVICE",
     "the fleet as its Redis store sees it: every live host, when it\n"
     "last called, what it asked for and used (docs/reference/fleet.md)"},
};

StatOptions stat_parse(const Args& args) {
  StatOptions o;
  CliParsed p = options_parse(args, kOptions);
  o.json = p.has("--json");
  o.prometheus = p.has("--prometheus");
  o.fleet = p.value("--fleet");
  if (p.has("--fleet") && o.fleet.empty()) usage_error("--fleet needs a SERVICE");
  if (p.has("--pid")) {
    std::string v = p.value("--pid");
    char* end = nullptr;
    long pid = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || !end || *end || pid <= 0 || pid > (1L << 22)) usage_error(fmt::format("bad --pid '{}'", v));
    o.pid = static_cast<int>(pid);
  }
  if (p.has("--watch")) {
    std::string v = p.value("--watch");
    char* end = nullptr;
    o.watch_s = std::strtod(v.c_str(), &end);
    if (v.empty() || !end || *end || !(o.watch_s >= 0.01 && o.watch_s <= 86400))
      usage_error(fmt::format("bad --watch '{}' (seconds, >= 0.01)", v));
  }
  if (p.has("--count")) {
    std::string v = p.value("--count");
    bool digits = !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
    o.count = digits ? std::stol(v) : 0;
    if (o.count <= 0) usage_error(fmt::format("bad --count '{}' (a whole number > 0)", v));
    // It counts --watch's intervals: alone it would be ignored, so it is refused.
    if (o.watch_s <= 0) usage_error("--count N counts the intervals of --watch SECS: give --watch too");
  }
  o.services = p.words;
  o.services.insert(o.services.end(), p.rest.begin(), p.rest.end());
  if (o.prometheus && (o.json || o.watch_s > 0 || o.pid))
    usage_error("--prometheus prints one exposition: not with --json, --watch or --pid");
  if (o.pid && o.watch_s > 0) usage_error("--pid looks a process up once: not with --watch");
  if (!o.fleet.empty() && (o.prometheus || o.watch_s > 0 || o.pid || !o.services.empty()))
    usage_error("--fleet SERVICE reads the store once: with --json only");
  return o;
}

void print(const ServiceStat& s, bool json) {
  if (json) fmt::print("{}\n", stat_json(s));
  else fmt::print("{}", stat_table(s));
  std::fflush(stdout);
}

// One service followed by `stat`: its open segment (none while it is absent or
// unusable), the previous snapshot for rates, and the last error said about it.
struct Watched {
  std::string name;
  std::unique_ptr<Segment> seg;
  ServiceStat prev;
  bool have_prev = false;
  std::string said;  // the last problem printed (each is printed once)
};

// Prints `msg` about `w` unless it was the last thing said about it.
void say_once(Watched& w, const std::string& msg) {
  if (w.said == msg) return;
  w.said = msg;
  fmt::print(stderr, "bonsaictl stat: {}\n", msg);
}

// Brings `w` up to date with its name: a removed segment is dropped, a replaced one
// (another inode under the same name) is opened afresh.
// @return 0 if there is a segment to read; else the exit status of the problem
// (said once), or -1 for a segment that was removed and is still absent.
int refresh(Watched& w, bool watching) {
  if (w.seg) {
    FileState f = w.seg->file_state();
    if (f == FileState::Removed) {
      w.seg.reset(), w.have_prev = false;
      say_once(w, fmt::format("service '{}' was removed", w.name));
      return -1;
    }
    if (f == FileState::Replaced) {
      w.seg.reset(), w.have_prev = false;
      if (watching) fmt::print(stderr, "bonsaictl stat: service '{}' was replaced; following the new segment\n", w.name);
    }
  }
  if (!w.seg) {
    try {
      w.seg = Segment::open(w.name, false);
    } catch (const CtlError& e) {
      bool absent = std::string_view(e.what()).find("does not exist") != std::string_view::npos;
      if (watching && absent && w.said.find("was removed") != std::string::npos) return -1;  // still gone
      say_once(w, e.what());
      return e.code;
    }
  }
  return 0;
}

// Every named (or every) service's snapshot; problems said on stderr, `status` set.
std::vector<ServiceStat> snapshots(const std::vector<std::string>& names, int& status) {
  std::vector<ServiceStat> out;
  for (const auto& name : names) {
    try {
      auto seg = Segment::open(name, false);
      out.push_back(stat_snapshot(*seg));
    } catch (const CtlError& e) {
      fmt::print(stderr, "bonsaictl stat: {}\n", e.what());
      status = e.code;
    }
  }
  return out;
}

int stat_prometheus(const StatOptions& o) {
  int status = kExitOk;
  std::vector<ServiceStat> stats = snapshots(o.services.empty() ? services_list() : o.services, status);
  std::vector<LabeledStat> labeled;
  for (const auto& s : stats) labeled.push_back({&s, ""});
  fmt::print("{}", prometheus_text(labeled));
  return status;
}

int stat_pid(const StatOptions& o) {
  int status = kExitOk;
  for (const ServiceStat& s : snapshots(o.services.empty() ? services_list() : o.services, status))
    for (const ProcStat& p : s.processes) {
      if (p.pid_unseen || p.pid != o.pid) continue;
      if (o.json) {
        ServiceStat one = s;
        one.processes = {p};
        fmt::print("{}\n", stat_json(one));
      } else {
        fmt::print("pid {} ({}{}) is attached to service {} of {} (scope {}, limits #{}, library {})\n", p.pid,
                   p.comm, p.supervised ? ", supervised" : "", s.service, user_text(geteuid()),
                   s.scope == ShmScope::Service ? "service" : "process", p.limits_seq, version_text(p.lib_version));
        ServiceStat one = s;
        one.processes = {p};
        one.exited_processes = 0;
        one.total = p.calls;
        fmt::print("{}", stat_table(one));
      }
      return kExitOk;
    }
  fmt::print(stderr, "bonsaictl stat: pid {} is not attached to any service of {}\n", o.pid, user_text(geteuid()));
  return kExitRuntime;
}

int cmd_stat(const Args& args) {
  StatOptions o = stat_parse(args);
  if (!o.fleet.empty()) return stat_fleet_view(o.fleet, o.json);
  if (o.prometheus) return stat_prometheus(o);
  if (o.pid) return stat_pid(o);
  bool all = o.services.empty();
  if (all) o.services = services_list();
  bool watching = o.watch_s > 0;
  std::vector<Watched> ws;
  for (const auto& name : o.services) ws.push_back(Watched{name, nullptr, {}, false, {}});
  int status = kExitOk;
  bool printed = false;
  // One round: every service's snapshot (with rates from the previous one).
  auto round = [&](bool show) {
    if (all && watching) {  // services created meanwhile join the watch
      for (const auto& name : services_list()) {
        bool known = false;
        for (const auto& w : ws) known = known || w.name == name;
        if (!known) ws.push_back(Watched{name, nullptr, {}, false, {}});
      }
    }
    for (auto& w : ws) {
      if (int rc = refresh(w, watching)) {
        if (rc > 0) status = rc;
        continue;
      }
      try {
        ServiceStat cur = stat_snapshot(*w.seg);
        if (w.have_prev) stat_rates(w.prev, cur);
        if (show) print(cur, o.json), printed = true;
        w.prev = std::move(cur);
        w.have_prev = true;
        w.said.clear();
      } catch (const CtlError& e) {
        say_once(w, e.what());
        status = e.code;
        w.seg.reset(), w.have_prev = false;  // a repaired or replaced segment is opened afresh
      }
    }
    if (all && watching)  // removed services leave an `all` watch
      std::erase_if(ws, [](const Watched& w) { return !w.seg && w.said.find("was removed") != std::string::npos; });
  };
  round(!watching);
  if (!watching) {
    if (ws.empty()) fmt::print(stderr, "bonsaictl stat: no services (start one with bonsaictl run or load)\n");
    return printed ? status : (status == kExitOk ? kExitRuntime : status);
  }
  if (ws.empty() && all) {
    fmt::print(stderr, "bonsaictl stat: no services (start one with bonsaictl run or load)\n");
    return kExitRuntime;
  }
  for (long n = 0; o.count < 0 || n < o.count; ++n) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.watch_s));
    if (!o.json && printed) fmt::print("\n");
    printed = false;
    round(true);
  }
  return status;
}

}  // namespace

extern const Command kCmdStat{
    "stat", "stat [SERVICE...] [--json | --prometheus] [--watch SECS [--count N]] [--pid PID]\n"
    "       stat --fleet SERVICE [--json]",
    "Prints each service's accounting (all services if none is named): per attached\n"
    "process, for exited processes and in total, per call: calls, bytes, throttled\n"
    "(calls that waited) and time waited. Dead processes' slots are reclaimed first.\n",
    kOptions,
    "With --watch a removed segment is dropped (said once) and a segment re-created under\n"
    "the same name is followed; without SERVICE, services created meanwhile join.\n"
    "A damaged segment is reported with how to recover (rm --force, then load or run).\n"
    "exit status: 0 ok, 1 no such service or unusable segment (or --pid: not attached),\n"
    "2 usage error\n",
    cmd_stat};

}  // namespace bonsai::ctl
