// SPDX-License-Identifier: MIT
// bonsaictl's subcommands: one table entry per command (name, synopsis, help,
// function), each defined in its own cmd_*.cc. ctl_main dispatches, handles --help
// and turns CtlError into "bonsaictl: message" and the exit code.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "base/diag.h"

namespace bonsai::ctl {

using Args = std::vector<std::string>;

struct Command {
  std::string_view name;
  std::string_view synopsis;  // "check FILE..."
  std::string_view help;      // what it does, options, exit status
  int (*run)(const Args& args);
};

extern const Command kCmdCheck, kCmdCheckLimits, kCmdLoad, kCmdRun, kCmdSet, kCmdStat, kCmdLs, kCmdRm, kCmdServe, kCmdTop, kCmdFleetAgent, kCmdCdi, kCmdProtectAgent;

// @return the command named `name`, or nullptr.
const Command* command_find(std::string_view name);

// The whole CLI: argv as main receives it. @return the exit status.
int ctl_main(int argc, char** argv);

// True if `args` asks for help (-h/--help before any "--").
bool wants_help(const Args& args);

// Takes the value of an option at args[i] ("-c FILE"); advances i. Throws a usage error if missing.
std::string option_value(const Args& args, size_t& i);

}  // namespace bonsai::ctl
