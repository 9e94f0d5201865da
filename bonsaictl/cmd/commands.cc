// SPDX-License-Identifier: MIT
// The table of subcommands and the dispatcher (see commands.h).
#include "cmd/commands.h"

#include <cstdlib>
#include <fmt/core.h>
#include <pwd.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "abi/shm_abi.h"
#include "base/diag.h"
#include "compress/wire_format.h"
#include "segment/shm_client.h"
#include "launch/oci_runtime.h"
#include "launch/sv_exec.h"

namespace bonsai::ctl {
namespace {

// The Makefile passes the top-level VERSION file's content.
#ifndef BONSAI_VERSION
#define BONSAI_VERSION "unknown"
#endif
constexpr std::string_view kVersion = BONSAI_VERSION;
const Command* const kTable[] = {&kCmdRun, &kCmdStat, &kCmdSet, &kCmdLoad, &kCmdCheck, &kCmdCheckLimits, &kCmdLs, &kCmdRm, &kCmdServe, &kCmdTop, &kCmdFleetAgent, &kCmdCdi, &kCmdProtectAgent};

void usage(FILE* out) {
  fmt::print(out, "usage: bonsaictl COMMAND [ARGS]   (bonsaictl COMMAND --help for details)\n");
  for (const Command* c : kTable) fmt::print(out, "  bonsaictl {}\n", c->synopsis);
  fmt::print(out,
             "bonsaictl --version prints the version; bonsaictl help COMMAND a command's help\n"
             "every command: --user NAME (root only) addresses NAME's services; run also runs CMD as NAME\n"
             "environment: BONSAI_SHM_PREFIX (segment namespace), BONSAI_LIB (libbonsai.so to preload)\n"
             "exit status: 0 success, 1 runtime failure, 2 usage or configuration error\n");
}

}  // namespace

const Command* command_find(std::string_view name) {
  for (const Command* c : kTable)
    if (c->name == name) return c;
  return nullptr;
}

bool wants_help(const Args& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

std::string option_value(const Args& args, size_t& i) {
  if (i + 1 >= args.size()) usage_error(fmt::format("option {} needs a value", args[i]));
  return args[++i];
}

namespace {

// `--user NAME|UID` before any "--", taken out of `args`: every command then addresses
// that user's services. Root only (a user's segments are private to them).
void user_option_take(Args& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") return;
    std::string who;
    if (args[i] == "--user" || args[i] == "-u") {
      if (i + 1 >= args.size()) usage_error(fmt::format("option {} needs a value", args[i]));
      who = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    } else if (args[i].rfind("--user=", 0) == 0) {
      who = args[i].substr(7);
      args.erase(args.begin() + static_cast<long>(i));
    } else {
      continue;
    }
    ctl_target_user_named(who);
    return;
  }
}

}  // namespace

int ctl_main(int argc, char** argv) {
  // The same program under the name bonsai-oci-runtime is an OCI runtime (oci_runtime.h):
  // runc's arguments, never bonsaictl's.
  if (argc >= 1 && argv[0]) {
    std::string_view self = argv[0];
    if (self.substr(self.rfind('/') + 1) == "bonsai-oci-runtime") return oci_runtime_main(argc, argv);
  }
  if (argc < 2) return usage(stderr), kExitUsage;
  std::string_view name = argv[1];
  if (name == "help" || name == "--help" || name == "-h") {
    if (argc > 2)
      if (const Command* c = command_find(argv[2])) return fmt::print("usage: bonsaictl {}\n{}", c->synopsis, c->help), kExitOk;
    return usage(stdout), kExitOk;
  }
  if (name == "sv-exec") return sv_exec_main(argc - 2, argv + 2);  // internal, never parsed as options
  if (name == "version" || name == "--version")  // the release, then what it reads and writes (docs/upgrades.md)
    return fmt::print("bonsaictl {}\nsegment layout {} (reads {}..{})\nwire format {} (decodes 1..{})\n", kVersion,
                      BONSAI_ABI_VERSION, kShmOldestLayout, BONSAI_ABI_VERSION, compress::kWireVersion, compress::kWireVersion),
           kExitOk;
  const Command* cmd = command_find(name);
  if (!cmd) {
    std::vector<std::string_view> names;
    for (const Command* c : kTable) names.push_back(c->name);
    std::string_view hint = closest_word(name, names);
    fmt::print(stderr, "bonsaictl: unknown command '{}'{}\n", name,
               hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint));
    usage(stderr);
    return kExitUsage;
  }
  Args args(argv + 2, argv + argc);
  if (wants_help(args)) return fmt::print("usage: bonsaictl {}\n{}", cmd->synopsis, cmd->help), kExitOk;
  try {
    user_option_take(args);
    return cmd->run(args);
  } catch (const CtlError& e) {
    fmt::print(stderr, "bonsaictl {}: {}\n", cmd->name, e.what());
    if (e.code == kExitUsage && std::string_view(e.what()).find("usage") == std::string_view::npos)
      fmt::print(stderr, "usage: bonsaictl {}\n", cmd->synopsis);
    return e.code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bonsaictl {}: {}\n", cmd->name, e.what());
    return kExitRuntime;
  }
}

}  // namespace bonsai::ctl
