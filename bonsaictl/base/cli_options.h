// SPDX-License-Identifier: MIT
// A command's options as one declarative table: the parser reads argv with it, the
// help text is generated from it, and `bonsaictl help --options` prints it for the
// check that the man page, the bash completion and the docs name the same options
// (tests/tools/check_cli_doc.sh). A table is small and read in order: no search
// structure, no library; errors are usage errors (exit 2) quoting the offending word
// and, for a misspelt option, the closest one.
#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::ctl {

enum class OptArg {
  None,      // a flag: --json
  Required,  // --watch SECS or --watch=SECS
  Optional,  // --wait, --wait=MS, or --wait MS when the next word is a whole number
};

struct CliOption {
  std::string_view names;  // "-n, --count": every spelling, the short one first
  OptArg arg = OptArg::None;
  std::string_view value = {};  // what the value is called in the help: "SECS"
  std::string_view help = {};   // the help's text: lines joined with '\n'
  bool hidden = false;          // internal (started by bonsaictl itself): parsed, never shown
};

using CliOptions = std::span<const CliOption>;

// `--user NAME`: every command takes it (cmd/commands.cc takes it out before the command parses).
extern const CliOption kGlobalOptions[1];

// What options_parse found: each option's values in the order given (a flag's is ""),
// and the other words.
class CliParsed {
 public:
  // True if the option with spelling `name` ("--count" or "-n") was given.
  bool has(std::string_view name) const;
  // Its last value, or `fallback` when it was not given.
  std::string value(std::string_view name, std::string_view fallback = {}) const;
  // Every value it was given (-l LIMIT -l LIMIT).
  std::vector<std::string> values(std::string_view name) const;

  std::vector<std::string> words;  // the operands, in order
  std::vector<std::string> rest;   // what follows "--", or (positional_stop) the first operand on
  bool dashdash = false;           // a "--" was seen

 private:
  friend CliParsed options_parse(const std::vector<std::string>&, CliOptions, bool);
  const CliOption* table_find(std::string_view name) const;
  CliOptions table_;
  std::vector<std::pair<const CliOption*, std::string>> given_;
};

// Parses `args` with `table`. Options may come anywhere before "--"; with
// `positional_stop` (run's CMD), the first operand ends the options and it and all
// after it go to `rest`. Throws a usage error (exit 2) for an unknown option (with
// "did you mean"), a missing value or a value given to a flag.
CliParsed options_parse(const std::vector<std::string>& args, CliOptions table, bool positional_stop = false);

// The help's option lines: "  -n, --count N   stop after N ...", continuation lines
// indented under the text. Hidden options are left out.
std::string options_help(CliOptions table);

// One line per option for tools: "NAMES<TAB>VALUE<TAB>none|required|optional".
std::string options_table_text(CliOptions table);

// An option's spellings: "-n, --count" -> {"-n", "--count"}.
std::vector<std::string_view> option_spellings(const CliOption& o);

}  // namespace bonsai::ctl
