// SPDX-License-Identifier: MIT
// The table of subcommands and the dispatcher (see commands.h).
#include "cmd/commands.h"

#include <algorithm>
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
  fmt::print(out, "bonsaictl --version prints the version; bonsaictl help COMMAND a command's help\n");
  fmt::print(out, "every command:\n{}", options_help(kGlobalOptions));
  fmt::print(out,
             "environment: BONSAI_SHM_PREFIX (segment namespace), BONSAI_LIB (libbonsai.so to preload)\n"
             "exit status: 0 success, 1 runtime failure, 2 usage or configuration error\n");
}

// An unknown command named (to `help`, or as the command): the closest one and the usage, on stderr.
void unknown_command(std::string_view context, std::string_view name) {
  std::vector<std::string_view> names;
  for (const Command* c : kTable) names.push_back(c->name);
  std::string_view hint = closest_word(name, names);
  fmt::print(stderr, "bonsaictl{}{}: unknown command '{}'{}\n", context.empty() ? "" : " ", context, name,
             hint.empty() ? "" : fmt::format(" (did you mean '{}'?)", hint));
  usage(stderr);
}

// `help --options`: every command's options table, one option a line
// (COMMAND<TAB>NAMES<TAB>VALUE<TAB>KIND; COMMAND '*' for those of every command), for
// tests/tools/check_cli_doc.sh.
void options_print() {
  auto lines = [](std::string_view cmd, CliOptions t) {
    std::string text = options_table_text(t);
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      fmt::print("{}\t{}\n", cmd, std::string_view(text).substr(at, nl - at));
      at = nl + 1;
    }
  };
  lines("*", kGlobalOptions);
  for (const Command* c : kTable) lines(c->name, c->options);
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

std::string command_help(const Command& c) {
  std::string out = fmt::format("usage: bonsaictl {}\n{}", c.synopsis, c.about);
  out += options_help(c.options);
  out += c.notes;
  return out;
}

namespace {

// Where the options of `c` end in `args`: at "--", and for run at CMD, its first operand
// (CMD's own --help or --user are CMD's). Values of the table's options are skipped.
size_t options_end(const Args& args, const Command& c) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return i;
    if (a.size() < 2 || a[0] != '-') {
      if (c.name == "run") return i;
      continue;
    }
    if (a.find('=') != std::string::npos) continue;
    auto takes_value = [&](CliOptions t) {
      for (const CliOption& o : t)
        for (std::string_view sp : option_spellings(o))
          if (sp == a) return o.arg == OptArg::Required;
      return false;
    };
    if (takes_value(c.options) || takes_value(kGlobalOptions)) ++i;
  }
  return args.size();
}

// `--user NAME|UID` (kGlobalOptions) before any "--", taken out of `args`: every command
// then addresses that user's services. Root only (a user's segments are private to them).
void user_option_take(Args& args, size_t end) {
  const std::vector<std::string_view> names = option_spellings(kGlobalOptions[0]);
  for (size_t i = 0; i < end && i < args.size(); ++i) {
    if (args[i] == "--") return;
    std::string who;
    size_t eq = args[i].find('=');
    std::string_view name = std::string_view(args[i]).substr(0, eq);
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    size_t take = 1;
    if (eq != std::string::npos && args[i].rfind("--", 0) == 0) {
      who = args[i].substr(eq + 1);
    } else if (eq == std::string::npos) {
      if (i + 1 >= args.size()) usage_error(fmt::format("option {} needs a value (NAME)", args[i]));
      who = args[i + 1];
      take = 2;
    } else {
      continue;
    }
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i + take));
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
    if (argc == 2) return usage(stdout), kExitOk;
    std::string_view what = argv[2];
    if (what == "--options") return options_print(), kExitOk;
    if (const Command* c = command_find(what)) return fmt::print("{}", command_help(*c)), kExitOk;
    unknown_command("help", what);
    return kExitUsage;
  }
  if (name == "sv-exec") return sv_exec_main(argc - 2, argv + 2);  // internal, never parsed as options
  if (name == "version" || name == "--version")  // the release, then what it reads and writes (docs/upgrades.md)
    return fmt::print("bonsaictl {}\nsegment layout {} (reads {}..{})\nwire format {} (decodes 1..{})\n", kVersion,
                      BONSAI_ABI_VERSION, kShmOldestLayout, BONSAI_ABI_VERSION, compress::kWireVersion, compress::kWireVersion),
           kExitOk;
  const Command* cmd = command_find(name);
  if (!cmd) {
    unknown_command("", name);
    return kExitUsage;
  }
  Args args(argv + 2, argv + argc);
  size_t end = options_end(args, *cmd);
  if (wants_help(Args(args.begin(), args.begin() + static_cast<long>(end))))
    return fmt::print("{}", command_help(*cmd)), kExitOk;
  try {
    user_option_take(args, end);
    return cmd->run(args);
  } catch (const CtlError& e) {
    fmt::print(stderr, "bonsaictl {}: {}\n", cmd->name, e.what());
    if (e.code == kExitUsage && e.show_usage && std::string_view(e.what()).find("usage") == std::string_view::npos)
      fmt::print(stderr, "usage: bonsaictl {}\n", cmd->synopsis);
    return e.code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bonsaictl {}: {}\n", cmd->name, e.what());
    return kExitRuntime;
  }
}

}  // namespace bonsai::ctl
