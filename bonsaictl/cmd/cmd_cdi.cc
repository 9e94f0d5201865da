// SPDX-License-Identifier: MIT
// `bonsaictl cdi generate [--output FILE]`: the CDI spec of this user's services
// (docs/reference/containers.md), so that `podman run --device bonsai.dev/service=NAME`
// makes a container's processes members of the host's service NAME.
#include <cctype>
#include <cstring>
#include <fmt/core.h>

#include "cmd/commands.h"
#include "launch/cdi_spec.h"

namespace bonsai::ctl {
namespace {

// A word as the shell reads it back: single-quoted unless it holds only safe characters.
std::string shell_word(const std::string& w) {
  bool plain = !w.empty();
  for (unsigned char c : w)
    plain = plain && (std::isalnum(c) || std::strchr("-_./=:,+@%", c));
  if (plain) return w;
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

constexpr CliOption kOptions[] = {
    {"-o, --output", OptArg::Required, "FILE",
     "where to write it (default /var/run/cdi/bonsai.yaml; - stdout);\n"
     "a FILE that is not this user's and prefix's spec is never overwritten"},
};

// `cdi docker-args NAME`: the docker run options of NAME's device, as shell words.
int cmd_docker_args(const CliParsed& p) {
  if (p.words.size() != 2 || !p.rest.empty()) usage_error("cdi docker-args needs one SERVICE");
  if (p.has("--output")) usage_error("cdi docker-args prints to stdout; --output is for cdi generate");
  std::vector<std::string> notes;
  std::vector<std::string> words = cdi_docker_args(p.words[1], notes);
  for (const auto& note : notes) fmt::print(stderr, "bonsaictl cdi: {}\n", note);
  std::string line;
  for (const auto& w : words) line += (line.empty() ? "" : " ") + shell_word(w);
  fmt::print("{}\n", line);
  return kExitOk;
}

int cmd_cdi(const Args& args) {
  CliParsed p = options_parse(args, kOptions);
  if (!p.words.empty() && p.words[0] == "docker-args") return cmd_docker_args(p);
  if (p.words.empty() || p.words[0] != "generate")
    usage_error(p.words.empty() ? "cdi needs a subcommand: generate, docker-args"
                                : fmt::format("unknown cdi subcommand '{}'", p.words[0]));
  if (p.words.size() > 1) usage_error(fmt::format("unexpected argument '{}'", p.words[1]));
  if (!p.rest.empty()) usage_error(fmt::format("unexpected argument '{}'", p.rest[0]));
  std::string output = p.value("--output", kCdiDefaultOutput);
  if (output.empty()) usage_error("--output needs a FILE (or - for stdout)");
  std::vector<std::string> notes;
  size_t n = cdi_generate(output, notes);
  for (const auto& note : notes) fmt::print(stderr, "bonsaictl cdi: {}\n", note);
  if (output != "-")
    fmt::print("wrote {}: {} device{} of kind {} (podman run --device {}={} ...)\n", output, n, n == 1 ? "" : "s",
               kCdiKind, kCdiKind, cdi_device_name("NAME"));
  return kExitOk;
}

}  // namespace

extern const Command kCmdCdi{"cdi", "cdi generate [--output FILE] | cdi docker-args SERVICE",
                             "Writes a Container Device Interface spec of kind bonsai.dev/service with one\n"
                             "device per service of this user (under BONSAI_SHM_PREFIX, as ls lists them):\n"
                             "podman run --device bonsai.dev/service=NAME IMAGE CMD runs CMD as a process\n"
                             "of the host's service NAME (the library preloaded, the service's segment and\n"
                             "the supervisor for static and Go programs mounted; docs/reference/containers.md).\n",
                             kOptions,
                             "Another user's services (--user NAME) are devices NAME:u<uid>. A segment that\n"
                             "fails bonsaictl's checks (owner, mode, type, a link) is no device.\n"
                             "load and rm rewrite the specs it wrote in /etc/cdi and /var/run/cdi.\n"
                             "docker-args SERVICE prints the docker run options that do what the device\n"
                             "does, as shell words, for Docker without CDI:\n"
                             "eval \"docker run $(bonsaictl cdi docker-args web) IMAGE CMD\"\n"
                             "exit status: 0 written, 1 no services or not writable, 2 usage error or\n"
                             "FILE another's spec\n",
                             cmd_cdi};

}  // namespace bonsai::ctl
