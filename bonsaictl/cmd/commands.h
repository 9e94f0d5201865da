// SPDX-License-Identifier: MIT
// bonsaictl's subcommands: one table entry per command (name, synopsis, help,
// function), each defined in its own cmd_*.cc. ctl_main dispatches, handles --help
// and turns CtlError into "bonsaictl: message" and the exit code.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "base/cli_options.h"
#include "base/diag.h"

namespace bonsai::ctl {

using Args = std::vector<std::string>;

// A command's help is generated: `about`, then its options table's lines, then `notes`
// (the exit status last). The same table parses its arguments (base/cli_options.h).
struct Command {
  std::string_view name;
  std::string_view synopsis;  // "check FILE..."
  std::string_view about;     // what it does
  CliOptions options;         // its options, in the help's order
  std::string_view notes;     // after the options: details, exit status
  int (*run)(const Args& args);
};

// The help `bonsaictl help NAME` prints: usage line, about, options, notes.
std::string command_help(const Command& c);

extern const Command kCmdCheck, kCmdCheckLimits, kCmdLoad, kCmdRun, kCmdSet, kCmdStat, kCmdLs, kCmdRm, kCmdServe, kCmdTop, kCmdFleetAgent, kCmdCdi, kCmdProtectAgent;

// @return the command named `name`, or nullptr.
const Command* command_find(std::string_view name);

// The whole CLI: argv as main receives it. @return the exit status.
int ctl_main(int argc, char** argv);

// True if `args` asks for help (-h/--help before any "--").
bool wants_help(const Args& args);


}  // namespace bonsai::ctl
