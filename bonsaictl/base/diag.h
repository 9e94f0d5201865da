// SPDX-License-Identifier: MIT
// bonsaictl's errors: compiler-style diagnostics for configuration files
// ("FILE:LINE:COL: message", 1-based) and the exception that carries an exit code
// (1 runtime failure, 2 usage or configuration error) up to main.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bonsai::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

struct Diag {
  std::string file;
  int line = 0;    // 1-based; 0: the whole file
  int column = 0;  // 1-based
  std::string message;
};

// "FILE:LINE:COL: message" (or "FILE: message" without a position).
std::string diag_format(const Diag& d);

// Prints each diagnostic on its own line to stderr.
void diags_print(const std::vector<Diag>& diags);

// Thrown by commands; main prints "bonsaictl: what()" and exits with `code`.
struct CtlError : std::runtime_error {
  int code;
  bool show_usage;  // main adds the command's synopsis line (a usage error, not refused input)
  CtlError(int exit_code, const std::string& message, bool usage = true)
      : std::runtime_error(message), code(exit_code), show_usage(usage) {}
};

[[noreturn]] inline void usage_error(const std::string& m) { throw CtlError(kExitUsage, m); }
// Well-formed input that is refused (limits `check` would refuse): exit 2, the reason
// alone -- the command was used correctly, so no synopsis follows it.
[[noreturn]] inline void refused_error(const std::string& m) { throw CtlError(kExitUsage, m, false); }
[[noreturn]] inline void runtime_error(const std::string& m) { throw CtlError(kExitRuntime, m); }

// The candidate closest to `word` (edit distance <= 2), or "" (for "did you mean").
std::string_view closest_word(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace bonsai::ctl
