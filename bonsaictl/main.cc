// SPDX-License-Identifier: MIT
// bonsaictl: the control CLI. Until the control plane lands (shared memory, YAML,
// run/stat/set), it validates limit strings and launches commands under BONSAI_LIMITS.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "abi/limit_parse.h"

namespace {

constexpr const char* kVersion = "0.1.0";

void usage(FILE* out) {
  std::fprintf(out,
               "usage: bonsaictl COMMAND [ARGS]\n"
               "  check-limits LIMITS   validate a BONSAI_LIMITS string\n"
               "  version               print the version\n"
               "  help                  this text\n"
               "exit status: 0 success, 1 runtime failure, 2 usage or configuration error\n");
}

int check_limits(const char* text) {
  bonsai::LimitSet set{};
  bonsai::ParseError err;
  if (!bonsai::limit_parse(text, set, err)) {
    std::fprintf(stderr, "bonsaictl: %s\n  %s\n  %*s^\n", err.message, text, static_cast<int>(err.offset), "");
    return 2;
  }
  for (uint32_t i = 0; i < set.count; ++i) {
    char buf[256];
    bonsai::rule_format(set.rules[i], buf, sizeof buf);
    std::printf("%s\n", buf);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") return usage(stdout), 0;
  if (cmd == "version" || cmd == "--version") return std::printf("bonsaictl %s\n", kVersion), 0;
  if (cmd == "check-limits" && argc == 3) return check_limits(argv[2]);
  std::fprintf(stderr, "bonsaictl: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
