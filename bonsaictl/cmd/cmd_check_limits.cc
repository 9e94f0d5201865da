// SPDX-License-Identifier: MIT
// `bonsaictl check-limits 'STRING'...`: validates a BONSAI_LIMITS string (the
// language of docs/reference/limits.md) and prints it back normalised, one rule per line.
// Changes nothing.
#include <fmt/core.h>

#include "abi/limit_parse.h"
#include "cmd/commands.h"

namespace bonsai::ctl {
namespace {

int cmd_check_limits(const Args& args) {
  CliParsed p = options_parse(args, {});
  std::vector<std::string> words = p.words;
  words.insert(words.end(), p.rest.begin(), p.rest.end());
  if (words.empty()) usage_error("no limit string given");
  std::string text;
  for (const auto& a : words) text += (text.empty() ? "" : ",") + a;
  LimitSet set{};
  ParseError err;
  if (!limit_parse(text, set, err)) {
    fmt::print(stderr, "bonsaictl check-limits: {}\n  {}\n  {}^\n", err.message, text, std::string(err.offset, ' '));
    return kExitUsage;
  }
  std::string out;
  for (uint32_t i = 0; i < set.count; ++i) {
    char buf[512];
    rule_format(set.rules[i], buf, sizeof buf);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  fmt::print("{}\n", out);
  return kExitOk;
}

}  // namespace

extern const Command kCmdCheckLimits{"check-limits", "check-limits 'LIMITS'...",
                                     "Validates a limit string (BONSAI_LIMITS, set, run -l; see docs/reference/limits.md) and\n"
                                     "prints it back normalised. Several arguments are joined with ','.\n",
                                     {},
                                     "exit status: 0 valid, 2 invalid (the message quotes the offending text)\n",
                                     cmd_check_limits};

}  // namespace bonsai::ctl
