// SPDX-License-Identifier: MIT
// `bonsaictl stat [SERVICE...] [--json] [--watch SECS] [--count N]`: per service, per
// attached process and in total, per call: calls, bytes, throttled, wait_ns; with
// --watch, rates over each interval. JSON: one document per service per line.
#include <chrono>
#include <cstdlib>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <thread>

#include "commands.h"
#include "shm_client.h"
#include "stat_format.h"

namespace bonsai::ctl {
namespace {

struct StatOptions {
  std::vector<std::string> services;
  bool json = false;
  double watch_s = 0;
  long count = -1;  // intervals to print with --watch; -1: until interrupted
};

StatOptions stat_parse(const Args& args) {
  StatOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--json") o.json = true;
    else if (a == "--watch" || a == "-w") {
      std::string v = option_value(args, i);
      char* end = nullptr;
      o.watch_s = std::strtod(v.c_str(), &end);
      if (!end || *end || !(o.watch_s >= 0.01 && o.watch_s <= 86400)) usage_error(fmt::format("bad --watch '{}' (seconds, >= 0.01)", v));
    } else if (a == "--count" || a == "-n") {
      std::string v = option_value(args, i);
      o.count = std::atol(v.c_str());
      if (o.count <= 0) usage_error(fmt::format("bad --count '{}'", v));
    } else if (!a.empty() && a[0] == '-') usage_error(fmt::format("unknown option '{}'", a));
    else o.services.push_back(a);
  }
  return o;
}

void print(const ServiceStat& s, bool json) {
  if (json) fmt::print("{}\n", stat_json(s));
  else fmt::print("{}", stat_table(s));
  std::fflush(stdout);
}

int cmd_stat(const Args& args) {
  StatOptions o = stat_parse(args);
  bool all = o.services.empty();
  if (all) o.services = services_list();
  std::vector<std::unique_ptr<Segment>> segs;
  int status = kExitOk;
  for (const auto& name : o.services) {
    try {
      segs.push_back(Segment::open(name, false));
    } catch (const CtlError& e) {
      fmt::print(stderr, "bonsaictl stat: {}\n", e.what());
      status = e.code;
    }
  }
  if (segs.empty()) {
    if (all && status == kExitOk) fmt::print(stderr, "bonsaictl stat: no services (start one with bonsaictl run or load)\n");
    return status == kExitOk ? kExitRuntime : status;
  }
  std::map<std::string, ServiceStat> prev;
  for (auto& seg : segs) {
    prev[seg->service()] = stat_snapshot(*seg);
    if (o.watch_s == 0) print(prev[seg->service()], o.json);
  }
  for (long n = 0; o.watch_s > 0 && (o.count < 0 || n < o.count); ++n) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.watch_s));
    if (!o.json && n) fmt::print("\n");
    for (auto& seg : segs) {
      ServiceStat cur = stat_snapshot(*seg);
      stat_rates(prev[seg->service()], cur);
      print(cur, o.json);
      prev[seg->service()] = std::move(cur);
    }
  }
  return status;
}

}  // namespace

extern const Command kCmdStat{
    "stat", "stat [SERVICE...] [--json] [--watch SECS [--count N]]",
    "Prints each service's accounting (all services if none is named): per attached\n"
    "process, for exited processes and in total, per call: calls, bytes, throttled\n"
    "(calls that waited) and time waited. Dead processes' slots are reclaimed first.\n"
    "  --json        one JSON document per service per line (docs/stat-json.md)\n"
    "  --watch SECS  print again every SECS with rates over the interval\n"
    "  --count N     with --watch: stop after N intervals\n"
    "exit status: 0 ok, 1 no such service or unusable segment, 2 usage error\n",
    cmd_stat};

}  // namespace bonsai::ctl
