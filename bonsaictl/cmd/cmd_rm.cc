// SPDX-License-Identifier: MIT
// `bonsaictl rm [--force] SERVICE...`: remove service segments. Refuses while
// processes are attached unless --force (they keep running with the limits they have).
#include <fmt/core.h>
#include <string_view>

#include "cmd/commands.h"
#include "config/shares_trusted.h"
#include "launch/cdi_spec.h"
#include "segment/shm_client.h"

namespace bonsai::ctl {
namespace {

// A removed service's rates no longer count under the host capacity `set` checks against.
void shares_forget(const std::string& name) {
  SharesTrusted t;
  std::string why;
  if (shares_trusted_read(t, why) > 0 && t.services.erase(name)) shares_trusted_write(t);
}

constexpr CliOption kOptions[] = {
    {"-f, --force", OptArg::None, {}, "remove it even with processes attached, or unusable"},
};

int cmd_rm(const Args& args) {
  CliParsed p = options_parse(args, kOptions);
  bool force = p.has("--force");
  std::vector<std::string> names = p.words;
  names.insert(names.end(), p.rest.begin(), p.rest.end());
  if (names.empty()) usage_error("no SERVICE given");
  int status = kExitOk;
  for (const auto& name : names) {
    try {
      unsigned live = 0;
      try {
        live = Segment::open(name, false)->live_processes();
      } catch (const CtlError& e) {
        // Unusable (damaged, truncated, planted by another user): only --force removes it.
        if (!force || std::string_view(e.what()).find("does not exist") != std::string_view::npos) throw;
      }
      if (live && !force)
        runtime_error(fmt::format("service '{}' has {} attached process{}; use --force to remove it anyway", name,
                                  live, live == 1 ? "" : "es"));
      segment_remove(name, force);
      shares_forget(name);
      if (live) fmt::print("removed {} ({} attached process{} keep running on their current limits)\n", name, live,
                           live == 1 ? "" : "es");
      else fmt::print("removed {}\n", name);
    } catch (const CtlError& e) {
      fmt::print(stderr, "bonsaictl rm: {}\n", e.what());
      status = e.code;
    }
  }
  // The devices of removed services leave the specs `cdi generate` wrote (docs/reference/containers.md).
  for (const auto& line : cdi_refresh()) fmt::print("cdi: {}\n", line);
  return status;
}

}  // namespace

extern const Command kCmdRm{"rm", "rm [--force] SERVICE...",
                            "Removes service segments. Refuses while processes are attached, or when the\n"
                            "segment is unusable (damaged, truncated, or a file another user put under\n"
                            "this name: only root can remove that one), unless --force; attached\n"
                            "processes keep their current limits.\n",
                            kOptions,
                            "exit status: 0 removed, 1 refused or absent, 2 usage error\n",
                            cmd_rm};

}  // namespace bonsai::ctl
