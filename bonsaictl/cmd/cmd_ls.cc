// SPDX-License-Identifier: MIT
// `bonsaictl ls [--json]`: the services of this user (under BONSAI_SHM_PREFIX) with
// their scope, attached processes and limits.
#include <fmt/core.h>

#include "cmd/commands.h"
#include "segment/shm_client.h"
#include "stat/stat_format.h"
#include "stat/stat_snapshot.h"
#include "stat/stat_text.h"

namespace bonsai::ctl {
namespace {

constexpr CliOption kOptions[] = {
    {"--json", OptArg::None, {}, "one JSON array"},
};

int cmd_ls(const Args& args) {
  CliParsed p = options_parse(args, kOptions);
  if (!p.words.empty() || !p.rest.empty())
    usage_error(fmt::format("unexpected argument '{}'", p.words.empty() ? p.rest[0] : p.words[0]));
  bool json = p.has("--json");
  std::string out = json ? "[" : "";
  if (!json) out += fmt::format("{:<24} {:<8} {:>9}  {}\n", "SERVICE", "SCOPE", "PROCESSES", "LIMITS");
  bool first = true;
  unsigned unusable = 0;
  for (const auto& name : services_list()) {
    std::string scope, limits, problem;
    unsigned procs = 0;
    std::vector<std::string> lim;
    try {
      auto seg = Segment::open(name, false);
      ServiceStat s = stat_snapshot(*seg);
      scope = s.scope == ShmScope::Service ? "service" : "process";
      procs = static_cast<unsigned>(s.processes.size());
      lim = limits_text(s.limits);  // exact in JSON; a fleet's grant in human units in the table
      if (!json)
        for (auto& l : lim) l = rule_text_human(l);
    } catch (const CtlError& e) {
      problem = e.what();
      ++unusable;
    }
    for (const auto& l : lim) limits += (limits.empty() ? "" : ", ") + l;
    if (json) {
      std::string arr;
      for (const auto& l : lim) arr += (arr.empty() ? "\"" : ",\"") + json_escape(l) + "\"";
      out += fmt::format("{}{{\"service\":\"{}\",\"scope\":\"{}\",\"processes\":{},\"limits\":[{}]", first ? "" : ",",
                         json_escape(name), scope, procs, arr);
      if (!problem.empty()) out += fmt::format(",\"error\":\"{}\"", json_escape(problem));
      out += "}";
    } else if (!problem.empty()) {
      out += fmt::format("{:<24} unusable: {}\n", name, problem);
    } else {
      out += fmt::format("{:<24} {:<8} {:>9}  {}\n", name, scope, procs, limits.empty() ? "none" : limits);
    }
    first = false;
  }
  if (json) out += "]\n";
  fmt::print("{}", out);
  if (unusable) {
    std::fflush(stdout);
    fmt::print(stderr, "bonsaictl ls: {} unusable segment{} (see above)\n", unusable, unusable == 1 ? "" : "s");
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace

extern const Command kCmdLs{"ls", "ls [--json]",
                            "Lists this user's services (segments under BONSAI_SHM_PREFIX): scope, attached\n"
                            "processes and limits.\n",
                            kOptions,
                            "An unusable segment (damaged, or another user's file under the name) is listed\n"
                            "with what is wrong and how to recover.\n"
                            "exit status: 0 ok, 1 an unusable segment or /dev/shm unreadable, 2 usage error\n",
                            cmd_ls};

}  // namespace bonsai::ctl
